import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

interface Item {
  scheduledFor: string;
  outcome: string;
  reason: string | null;
  detail: string;
  executionId?: string;
  trigger: string | null;
}

/**
 * DESIGN §7 "Timeline" with real processes: a scheduler, a worker and the API, every-second tasks
 * calling a webhook, and the things that keep a slot from running — a pause, an edit, a catch-up
 * after a pause, an overlap with a slow webhook, a flow-control wait, a handler no worker offers,
 * a leader killed for longer than a slot's maxDelay. Each task's timeline must say, for each slot,
 * the outcome, the reason code and what caused it; and every slot has exactly one outcome.
 */
describe('fault: the timeline explains every slot of real runs', () => {
  let cluster: Cluster;
  let opsKey: string;
  const timelines = new Map<string, Item[]>();
  let t0 = 0;
  let pausedAt = 0;
  let editedAt = 0;
  let killedAt = 0;
  let restartedAt = 0;

  const callAs = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cluster.api!.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBeLessThan(300);
  };
  const create = async (name: string, body: Record<string, unknown>) => {
    const res = await cluster.call('POST', '/v1/tasks', {
      name,
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      schedule: { cron: '* * * * * *' },
      ...body,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };
  const timelineOf = async (name: string) => {
    const res = await cluster.call(
      'GET',
      `/v1/tasks/${name}/timeline?from=${new Date(t0).toISOString()}&to=${new Date().toISOString()}&limit=1000`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    return res.body.items as Item[];
  };

  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
    opsKey = (await cluster.call('POST', '/v1/api-keys', { name: 'ops-ci', role: 'admin' })).body.key;
    t0 = Math.ceil(Date.now() / 1000) * 1000;
    await create('tl-overlap', { payload: { url: cluster.invocations.url({ delay: 2_500 }) } });
    await create('tl-pause', {});
    await create('tl-edit', {});
    await create('tl-catchup', {});
    for (const name of ['tl-flow-a', 'tl-flow-b']) {
      await create(name, {
        payload: { url: cluster.invocations.url({ delay: 2_000 }) },
        schedule: { cron: '*/4 * * * * *' },
        policy: { concurrency: { key: 'tl-reports', limit: 1 } },
      });
    }
    await create('tl-no-worker', { handler: 'nobody-offers-this' });
    await create('tl-leader', { policy: { maxDelay: '1s', misfire: 'skip' } });
    // Today and tomorrow (UTC) excluded: the scheduler plans none of its slots.
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect((await cluster.call('PUT', '/v1/calendars/tl-days-off', { dates: [today, tomorrow] })).status).toBe(201);
    await create('tl-calendar', { schedule: { cron: '* * * * * *', exclude: ['tl-days-off'] } });
    await create('tl-dst', {
      schedule: { cron: '30 2 * * *', timezone: 'Europe/Berlin', dst: { gap: 'skip', overlap: 'first' } },
    });

    await sleep(5_000);
    pausedAt = Date.now();
    await callAs(opsKey, 'POST', '/v1/tasks/tl-pause/pause', {});
    await callAs(opsKey, 'POST', '/v1/tasks/tl-catchup/pause', {});
    editedAt = Date.now();
    await callAs(opsKey, 'PATCH', '/v1/tasks/tl-edit', { schedule: { cron: '*/2 * * * * *' } });
    await sleep(6_000);
    await cluster.call('POST', '/v1/tasks/tl-catchup/resume', {});

    // The only scheduler dies; for 8 s nobody leads the shard.
    killedAt = Date.now();
    await cluster.schedulers[0]!.stop('SIGKILL');
    await sleep(8_000);
    restartedAt = Date.now();
    await cluster.add('scheduler');
    await cluster.waitForLeader(15_000);
    // Let the new leader decide the outage's slots and the worker run what is due.
    await sleep(6_000);
    for (const name of [
      'tl-overlap',
      'tl-pause',
      'tl-edit',
      'tl-catchup',
      'tl-flow-a',
      'tl-flow-b',
      'tl-no-worker',
      'tl-leader',
      'tl-calendar',
    ])
      timelines.set(name, await timelineOf(name));
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const items = (name: string) => timelines.get(name)!;
  const withReason = (name: string, reason: string) => items(name).filter((i) => i.reason === reason);

  it('every slot has exactly one outcome, and none is unexplained', () => {
    for (const [name, list] of timelines) {
      const slots = list.map((i) => i.scheduledFor);
      expect(new Set(slots).size, name).toBe(slots.length);
      expect(
        list.filter((i) => i.reason === 'unrecorded'),
        name,
      ).toEqual([]);
      // Every second of the window is there (the flow tasks every 4 s), each slot from the schedule.
      expect(list.filter((i) => i.trigger !== 'catchup' && i.trigger !== 'manual').length, name).toBeGreaterThan(5);
    }
  });

  it('overlap: a slot skipped while the slow webhook ran names the execution it overlapped', async () => {
    // A slot due while one ran was skipped, or (the last few) still waits its turn, parked behind the run ahead.
    const overlapped = withReason('tl-overlap', 'overlap');
    expect(new Set(overlapped.map((i) => i.outcome))).toEqual(new Set(['skipped', 'pending']));
    const skipped = overlapped.filter((i) => i.outcome === 'skipped');
    expect(skipped.length).toBeGreaterThan(3);
    const ran = new Set(
      items('tl-overlap')
        .filter((i) => i.outcome === 'succeeded' || i.outcome === 'running')
        .map((i) => i.executionId),
    );
    for (const item of skipped) {
      const named = /execution ([0-9a-f-]{36})/.exec(item.detail)?.[1];
      expect(ran.has(named), item.detail).toBe(true);
    }
  });

  it('pause: the slots after the pause did not run, naming when and the key that paused it', () => {
    const after = items('tl-pause').filter((i) => Date.parse(i.scheduledFor) > pausedAt + 3_000);
    expect(after.length).toBeGreaterThan(15);
    expect(new Set(after.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['not_planned/paused']));
    expect(after[0]!.detail).toMatch(/the task was paused at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d by key ops-ci/);
    expect(
      items('tl-pause')
        .filter((i) => Date.parse(i.scheduledFor) < pausedAt - 2_000 && i.reason !== 'before_created')
        .every((i) => i.outcome === 'succeeded'),
    ).toBe(true);
  });

  it('edit: the seconds the new schedule dropped name the version that replaced them and its key', () => {
    const after = items('tl-edit').filter((i) => Date.parse(i.scheduledFor) > editedAt + 3_000);
    const odd = after.filter((i) => (Date.parse(i.scheduledFor) / 1000) % 2 === 1);
    const even = after.filter(
      (i) => (Date.parse(i.scheduledFor) / 1000) % 2 === 0 && Date.parse(i.scheduledFor) < killedAt,
    );
    expect(odd.length).toBeGreaterThan(5);
    expect(new Set(odd.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['not_planned/edited']));
    expect(odd[0]!.detail).toMatch(/version 2 of the task \((update|replace) at .* by key ops-ci\)/);
    expect(new Set(even.map((i) => i.outcome))).toEqual(new Set(['succeeded']));
  });

  it('catch-up: the slots of the pause were given up for one catch-up run, named with the misfire policy', () => {
    const list = items('tl-catchup');
    const catchUp = list.find((i) => i.trigger === 'catchup');
    expect(catchUp).toMatchObject({ outcome: 'succeeded', reason: 'catch_up' });
    const missed = list.filter((i) => i.reason === 'catch_up' && i.outcome === 'missed');
    expect(missed.length).toBeGreaterThan(3);
    for (const item of missed) {
      expect(item.detail).toContain(`catch-up run ${catchUp!.executionId}`);
      expect(item.detail).toContain('misfire run_once');
      expect(item.detail).toContain('by key ops-ci');
    }
  });

  it('flow control: a run held behind the other task on its key says how long it waited and for which key', () => {
    const waited = [...withReason('tl-flow-a', 'flow_control'), ...withReason('tl-flow-b', 'flow_control')];
    expect(waited.length).toBeGreaterThan(1);
    expect(
      waited.every((i) => ['succeeded', 'running', 'pending'].includes(i.outcome)),
      JSON.stringify(waited),
    ).toBe(true);
    expect(waited.find((i) => i.outcome === 'succeeded')!.detail).toMatch(/waited \d\.\d s for key "tl-reports"/);
  });

  it('no worker: the due runs of a handler nobody offers wait, and say for which handler', () => {
    const due = items('tl-no-worker').filter((i) => i.executionId && Date.parse(i.scheduledFor) < killedAt);
    expect(due.length).toBeGreaterThan(5);
    expect(new Set(due.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['pending/no_worker']));
    expect(due[0]!.detail).toContain('no live worker offers handler "nobody-offers-this"');
  });

  it('no leader: the slots of the outage past maxDelay were missed because no scheduler led the shard, from when to when', () => {
    const outage = items('tl-leader').filter(
      (i) => Date.parse(i.scheduledFor) > killedAt + 5_000 && Date.parse(i.scheduledFor) < restartedAt,
    );
    expect(outage.length).toBeGreaterThanOrEqual(2);
    expect(new Set(outage.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['missed/no_leader']));
    expect(outage[0]!.detail).toMatch(
      /no scheduler led shard 0 from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/,
    );
    const before = items('tl-leader').filter(
      (i) => Date.parse(i.scheduledFor) < killedAt - 2_000 && i.reason !== 'before_created',
    );
    expect(before.every((i) => i.outcome === 'succeeded')).toBe(true);
  });

  it('calendar: a day the calendar excludes has no run, and every slot of it names the calendar', async () => {
    const list = items('tl-calendar').filter((i) => i.reason !== 'before_created');
    expect(list.length).toBeGreaterThan(20);
    expect(new Set(list.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['not_planned/calendar']));
    expect(list[0]!.detail).toMatch(/calendar "tl-days-off" excludes \d{4}-\d\d-\d\d/);
    expect(await cluster.executionsOf('tl-calendar')).toEqual([]);
  });

  it("DST in Europe/Berlin: the gap and the fold of the coming clock changes, as the task's policy decides them", async () => {
    const around = async (from: string, to: string) =>
      (await cluster.call('GET', `/v1/tasks/tl-dst/timeline?from=${from}&to=${to}`)).body.items as (Item & {
        local: string;
      })[];
    const spring = await around('2027-03-27T00:00:00Z', '2027-03-29T23:00:00Z');
    expect(spring.map((i) => `${i.local.slice(0, 16)} ${i.outcome}/${i.reason}`)).toEqual([
      '2027-03-27T02:30 upcoming/null',
      '2027-03-28T03:30 not_planned/dst_gap',
      '2027-03-29T02:30 upcoming/null',
    ]);
    expect(spring[1]!.detail).toContain('dst.gap skip');
    const autumn = await around('2027-10-31T00:00:00Z', '2027-10-31T03:00:00Z');
    expect(autumn.map((i) => `${i.local.slice(0, 26)} ${i.outcome}/${i.reason}`)).toEqual([
      '2027-10-31T02:30:00.000+02 upcoming/null',
      '2027-10-31T02:30:00.000+01 not_planned/dst_fold',
    ]);
    expect(autumn[1]!.detail).toContain('dst.overlap first');
  });

  it('punctual_slots_total counts the outcomes where they were decided', async () => {
    const scrape = async (url: string, headers: Record<string, string> = {}) =>
      (await fetch(`${url}/metrics`, { headers })).text();
    const worker = await scrape(cluster.workers[0]!.url);
    expect(worker).toMatch(/^punctual_slots_total\{outcome="skipped",reason="overlap"\} [1-9]/m);
    expect(worker).toMatch(/^punctual_slots_total\{outcome="succeeded",reason="none"\} [1-9]/m);
    expect(worker).toMatch(/^punctual_slots_total\{outcome="succeeded",reason="catch_up"\} [1-9]/m);
    const scheduler = await scrape(cluster.schedulers[1]!.url);
    expect(scheduler).toMatch(/^punctual_slots_total\{outcome="missed",reason="late"\} [1-9]/m);
  });
});
