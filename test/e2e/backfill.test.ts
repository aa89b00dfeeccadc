import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';

/**
 * A backfill of slots the planner recorded missed (DESIGN §1.1: each slot runs exactly once), with
 * real processes: the handler is called once for each of them, and for no other slot again.
 */
describe('backfill: the missed slots of an outage run once each', () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs each missed slot of its window once, as its own row, and leaves the slots that ran alone', async () => {
    const name = 'backfilled';
    const created = await cluster.call('POST', '/v1/tasks', {
      name,
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      schedule: { cron: '* * * * * *' },
      // Slots more than 5 s late when planned are missed; a busy machine's on-time slots are not.
      policy: { misfire: 'skip', maxDelay: '5s' },
      paused: true,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // An outage as the planner finds it: the cursor 30 s back, the slots more than 5 s late missed.
    const from = new Date(Math.floor(Date.now() / 1000) * 1000 - 30_000);
    await cluster.db.query(`UPDATE task SET next_run_at = $1, status = 'active' WHERE name = $2`, [from, name]);
    await cluster.waitFor(
      async () => (await cluster.executionsOf(name)).some((r) => r.status === 'succeeded'),
      30_000,
      'a slot after the outage to run',
    );
    // The window: the outage and the first slot that ran after it (the task runs on meanwhile).
    const before = await cluster.executionsOf(name);
    const ran = before.filter((r) => r.status === 'succeeded');
    const missed = before.filter(
      (r) => r.status === 'missed' && r.scheduled_for.getTime() < ran[0]!.scheduled_for.getTime(),
    );
    expect(missed.length).toBeGreaterThanOrEqual(10);
    const window = { from: before[0]!.scheduled_for.toISOString(), to: ran[0]!.scheduled_for.toISOString() };

    const res = await cluster.call('POST', `/v1/tasks/${name}/backfill`, window);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.planned).toBe(missed.length);
    const after = await cluster.waitFor(
      async () => {
        const rows = await cluster.executionsOf(name);
        return missed.every((m) => rows.find((r) => r.id === m.id)?.status === 'succeeded') && rows;
      },
      30_000,
      'every missed slot to run',
    );
    // One row a slot still; each missed slot's handler called once, each slot that ran not again.
    expect(new Set(after.map((r) => r.scheduled_for.getTime())).size).toBe(after.length);
    const calls = cluster.invocations.callsBy();
    expect(missed.filter((m) => calls.get(m.id) !== 1).map((m) => `${m.id}: ${calls.get(m.id) ?? 0}`)).toEqual([]);
    expect(
      after
        .filter((r) => r.status === 'succeeded' && calls.get(r.id) !== 1)
        .map((r) => `${r.id}: ${calls.get(r.id) ?? 0}`),
    ).toEqual([]);
    expect(after.filter((r) => missed.some((m) => m.id === r.id)).every((r) => r.trigger === 'backfill')).toBe(true);
  });
});
