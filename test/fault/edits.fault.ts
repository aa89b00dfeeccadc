import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

/** The next slot of a task every `periodS` seconds that is at least `leadMs` away. */
function nextSlot(periodS: number, leadMs: number): number {
  const period = periodS * 1000;
  let slot = Math.ceil(Date.now() / period) * period;
  if (slot - Date.now() < leadMs) slot += period;
  return slot;
}

const sleepUntil = (at: number) => sleep(Math.max(0, at - Date.now()));

/**
 * DESIGN §4 with real processes: edits, pauses and resumes made right before a slot (planned
 * within the lookahead, perhaps already queued) never lose it and never run it twice; an attempt
 * in progress finishes its slot under the definition it started with; a task whose slots cannot be
 * computed is kept and shown, not completed. Runs are counted by the webhook the tasks call.
 */
describe('fault: edits, pauses and planner errors around a slot', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const callsOf = async (task: string) => {
    const rows = await cluster.executionsOf(task);
    const ids = new Set(rows.map((r) => r.id));
    return { rows, calls: cluster.invocations.calls.filter((c) => ids.has(c.executionId)) };
  };

  const create = async (name: string, body: Record<string, unknown>) => {
    const res = await cluster.call('POST', '/v1/tasks', { name, handler: 'http', ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };

  it('a change of what runs, 600 ms before a slot, runs that slot once, under the new definition', async () => {
    await create('edit-before', {
      payload: { url: cluster.invocations.url({ v: 1 }) },
      schedule: { cron: '*/5 * * * * *' },
    });
    const slot = nextSlot(5, 1_500);
    await sleepUntil(slot - 600);
    const res = await cluster.call('PATCH', '/v1/tasks/edit-before', {
      payload: { url: cluster.invocations.url({ v: 2 }) },
    });
    expect(res.status).toBe(200);
    await cluster.waitFor(
      async () =>
        (await cluster.executionsOf('edit-before')).find(
          (e) => e.scheduled_for.getTime() === slot && e.status === 'succeeded',
        ),
      15_000,
      'the slot to run',
    );
    const { rows, calls } = await callsOf('edit-before');
    const atSlot = rows.find((e) => e.scheduled_for.getTime() === slot)!;
    expect(calls.filter((c) => c.executionId === atSlot.id).map((c) => c.url)).toEqual([
      cluster.invocations.url({ v: 2 }).replace(/^http:\/\/[^/]+/, ''),
    ]);
  });

  it('a schedule change right before a slot the new schedule also has runs it once', async () => {
    await create('reschedule-before', {
      payload: { url: cluster.invocations.url() },
      schedule: { cron: '*/5 * * * * *' },
    });
    const slot = nextSlot(10, 1_500);
    await sleepUntil(slot - 600);
    await cluster.call('PATCH', '/v1/tasks/reschedule-before', { schedule: { cron: '*/10 * * * * *' } });
    await cluster.waitFor(
      async () =>
        (await cluster.executionsOf('reschedule-before')).find(
          (e) => e.scheduled_for.getTime() === slot && e.status === 'succeeded',
        ),
      15_000,
      'the slot to run',
    );
    const { rows, calls } = await callsOf('reschedule-before');
    expect(
      calls.filter((c) => c.executionId === rows.find((e) => e.scheduled_for.getTime() === slot)!.id),
    ).toHaveLength(1);
  });

  it('pause and resume, 600 and 300 ms before a slot, run that slot once', async () => {
    await create('pause-before', { payload: { url: cluster.invocations.url() }, schedule: { cron: '*/5 * * * * *' } });
    const slot = nextSlot(5, 1_500);
    await sleepUntil(slot - 600);
    expect((await cluster.call('POST', '/v1/tasks/pause-before/pause')).status).toBe(200);
    await sleepUntil(slot - 300);
    expect((await cluster.call('POST', '/v1/tasks/pause-before/resume', {})).status).toBe(200);
    await cluster.waitFor(
      async () =>
        (await cluster.executionsOf('pause-before')).find(
          (e) => e.scheduled_for.getTime() === slot && e.status === 'succeeded',
        ),
      15_000,
      'the slot to run',
    );
    const { rows, calls } = await callsOf('pause-before');
    expect(
      calls.filter((c) => c.executionId === rows.find((e) => e.scheduled_for.getTime() === slot)!.id),
    ).toHaveLength(1);
    expect(rows.filter((e) => e.status === 'skipped')).toEqual([]);
  });

  it.each([
    ['a description', { description: 'edited while it ran' }],
    ['the payload', { payload: { url: 'http://127.0.0.1:9/elsewhere' } }],
  ])(
    'an edit of %s during a running attempt that then fails: the retry runs, under the definition the slot started with',
    async (what, change) => {
      const name = `edit-running-${what === 'a description' ? 'description' : 'payload'}`;
      const url = cluster.invocations.url({ delay: 1_500, failFirst: 1 });
      await create(name, {
        payload: { url },
        schedule: { at: new Date(Date.now() + 1_500).toISOString() },
        policy: { retry: { attempts: 3, backoff: '500ms' } },
      });
      await cluster.waitFor(async () => (await callsOf(name)).calls.length > 0, 15_000, 'attempt 1 to call');
      expect((await cluster.call('PATCH', `/v1/tasks/${name}`, change)).status).toBe(200);
      const done = await cluster.waitFor(
        async () => (await cluster.executionsOf(name)).find((e) => e.status === 'succeeded'),
        20_000,
        'the slot to succeed',
      );
      expect(done.attempt).toBe(2);
      const { calls } = await callsOf(name);
      expect(calls.map((c) => [c.status, c.url])).toEqual([
        [500, url.replace(/^http:\/\/[^/]+/, '')],
        [200, url.replace(/^http:\/\/[^/]+/, '')],
      ]);
    },
  );

  it('jitter changed back and forth around planned slots: nothing starts before its fire_at, and every slot runs once', async () => {
    await create('jittery', {
      payload: { url: cluster.invocations.url() },
      schedule: { cron: '* * * * * *', jitter: '0s' },
    });
    const from = nextSlot(1, 1_000);
    // Each edit moves the fire_at of rows already planned (and maybe already pushed, for the old instant).
    for (const jitter of ['900ms', '0s', '700ms', '50ms', '900ms', '0s']) {
      await sleepUntil(nextSlot(1, 200) - 100);
      expect(
        (await cluster.call('PATCH', '/v1/tasks/jittery', { schedule: { cron: '* * * * * *', jitter } })).status,
      ).toBe(200);
    }
    const to = nextSlot(1, 0) - 2_000;
    await cluster.settle(to, 15_000);
    const { rows } = await cluster.db.query(
      `SELECT id, scheduled_for, fire_at, started_at, status FROM task_execution WHERE task_name = 'jittery' AND scheduled_for BETWEEN $1 AND $2`,
      [new Date(from), new Date(to)],
    );
    expect(rows.length).toBe((to - from) / 1000 + 1);
    const early = rows.filter((r) => r.started_at && r.started_at.getTime() < r.fire_at.getTime());
    expect(
      early.map(
        (r) =>
          `${r.scheduled_for.toISOString()}: started ${r.fire_at.getTime() - r.started_at.getTime()} ms before its fire_at`,
      ),
    ).toEqual([]);
    // The webhook saw each call no earlier than its slot's fire_at either (same clock), and one call per slot.
    const fireAt = new Map(rows.map((r) => [r.id as string, r.fire_at.getTime() as number]));
    const calls = cluster.invocations.calls.filter((c) => fireAt.has(c.executionId));
    expect(calls.filter((c) => c.at < fireAt.get(c.executionId)!)).toEqual([]);
    expect(new Set(calls.map((c) => c.executionId)).size).toBe(calls.length);
    expect(rows.map((r) => r.status)).toEqual(rows.map(() => 'succeeded'));
    await cluster.call('POST', '/v1/tasks/jittery/pause');
  });

  it('a task whose slots cannot be computed stays active with its cursor and shows why; the others run', async () => {
    await create('healthy', { payload: { url: cluster.invocations.url() }, schedule: { cron: '* * * * * *' } });
    // Written past the API's validation, as a schedule the time library no longer accepts would be.
    const cursor = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await cluster.db.query(
      `INSERT INTO task (name, handler, schedule_kind, cron, secret, next_run_at) VALUES ('broken', 'noop', 'cron', '61 * * * *', 's', $1)`,
      [cursor],
    );
    const broken = async () =>
      (await cluster.db.query(`SELECT status, next_run_at, last_error FROM task WHERE name = 'broken'`)).rows[0];
    await cluster.waitFor(
      async () => (await broken()).last_error,
      15_000,
      'the planner to say why the broken task cannot be planned',
    );
    // The planner passes that plan the healthy task's next slots leave the broken one as it was.
    await cluster.waitFor(
      async () =>
        (await cluster.executionsOf('healthy')).filter((e) => e.status === 'succeeded' && e.scheduled_for > cursor)
          .length >= 2,
      15_000,
      'two runs of the healthy task after the broken one came',
    );
    const row = await broken();
    expect(row).toMatchObject({ status: 'active', next_run_at: cursor });
    expect(row.last_error).toMatch(/minute/i);
    expect((await cluster.call('GET', '/v1/tasks/broken')).body.lastError).toBe(row.last_error);
    const metrics = await (await fetch(`${cluster.schedulers[0]!.url}/metrics`)).text();
    expect(Number(/^punctual_task_errors_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
  });
});
