import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

/**
 * DESIGN §4 "A slot being retried still holds its task", under the default policies (overlap
 * `skip`): a task every 5 s whose 2 s run fails once, retried after ~4 s — so the retry comes after
 * the next slot. The retry finishes its slot; the slot that came while it was pending is the one
 * judged by the overlap policy. Counted at the webhook the handler calls.
 */
describe("a retry that meets its task's next slot (overlap skip, the default)", () => {
  let cluster: Cluster;
  let rows: Awaited<ReturnType<Cluster['executionsOf']>>;

  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 2, api: true });
    const res = await cluster.call('POST', '/v1/tasks', {
      name: 'retry-into-next-slot',
      handler: 'http',
      payload: { url: cluster.invocations.url({ delay: 2_000, failFirst: 1 }) },
      schedule: { cron: '*/5 * * * * *' },
      policy: { retry: { attempts: 3, backoff: '4s', maxBackoff: '4s' } },
    });
    expect(res.status).toBe(201);
    await sleep(17_000);
    await cluster.call('POST', '/v1/tasks/retry-into-next-slot/pause');
    // What started finishes: its retry, up to 4.8 s after a 2 s failure, then 2 s more.
    await cluster.waitFor(
      async () =>
        (await cluster.executionsOf('retry-into-next-slot')).every((e) =>
          ['succeeded', 'skipped', 'dead', 'cancelled'].includes(e.status),
        ),
      20_000,
      'every run to end',
    );
    rows = await cluster.executionsOf('retry-into-next-slot');
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('every slot that started succeeds on its retry: two webhook calls each, the second one answered', () => {
    const calls = cluster.invocations.callsBy();
    const started = rows.filter((e) => (calls.get(e.id) ?? 0) > 0);
    expect(started.length).toBeGreaterThanOrEqual(2);
    expect(started.map((e) => [e.status, e.attempt, calls.get(e.id)])).toEqual(started.map(() => ['succeeded', 2, 2]));
  });

  it('the slots skipped for overlap never started, and came while a retry was pending', () => {
    const calls = cluster.invocations.callsBy();
    const skipped = rows.filter((e) => e.status === 'skipped');
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    for (const s of skipped) {
      expect([s.skip_reason, s.attempt, calls.get(s.id) ?? 0]).toEqual(['overlap', 0, 0]);
      const previous = rows.filter((e) => e.scheduled_for < s.scheduled_for && e.status === 'succeeded').at(-1)!;
      // That run (started before this slot) finished after this slot's time: it held the task.
      expect(previous.finished_at!.getTime()).toBeGreaterThan(s.scheduled_for.getTime());
    }
  });
});
