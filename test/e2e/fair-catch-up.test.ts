import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';
import { expectEverySlotSucceeded } from '../support/promises.js';
import { insertTasks } from '../support/tasks.js';

const RATE = 100;
const CATCHUP_MAX = 100;

/**
 * Fair catch-up (DESIGN §7 wave 4) with real processes: namespace team-a comes back from a day's
 * pause with `catchUp: all` (1,000 catch-up runs), team-c a moment later (100), while team-b's
 * every-second tasks run on. The backlog is released within CATCHUP_RATE, round-robin across
 * namespaces; team-b's slots are never held by it.
 */
describe('fair catch-up: one namespace’s backlog does not stand in front of another’s runs', () => {
  let cluster: Cluster;
  let b: { ids: string[]; firstSlot: number };

  beforeAll(async () => {
    cluster = await Cluster.start({
      schedulers: 1,
      workers: 1,
      api: true,
      env: { CATCHUP_RATE: String(RATE), CATCHUP_MAX: String(CATCHUP_MAX) },
    });
    for (const ns of ['team-a', 'team-b', 'team-c'])
      expect((await cluster.call('PUT', `/v1/namespaces/${ns}`, {})).status).toBe(201);
    expect((await cluster.call('PUT', '/v1/namespaces/team-a', { quotas: { maxTasks: 40 } })).status).toBe(200);
    // team-a and team-c: every-minute tasks paused a day ago (their cursor and creation moved back a day).
    const dayAgo = new Date(Math.floor((Date.now() - 86_400_000) / 60_000) * 60_000);
    for (const [prefix, count] of [
      ['team-a/a', 10],
      ['team-c/c', 1],
    ] as const) {
      await insertTasks(cluster.db, count, {
        prefix,
        nextRunAt: dayAgo,
        cron: '* * * * *',
        status: 'paused',
        createdAt: new Date(dayAgo.getTime() - 3_600_000),
      });
    }
    b = await cluster.createEverySecondTasks(10, {}, { prefix: 'team-b/b' });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('releases the catch-ups within the rate, round-robin across namespaces, and every slot of team-b runs once', async () => {
    await sleep(3_000); // team-b on its own first
    const resumedAt = Date.now();
    for (let i = 1; i <= 10; i += 1)
      expect((await cluster.call('POST', `/v1/tasks/a-${i}/resume?namespace=team-a`, { catchUp: 'all' })).status).toBe(
        200,
      );
    expect((await cluster.call('POST', '/v1/tasks/c-1/resume?namespace=team-c', { catchUp: 'all' })).status).toBe(200);

    const catchUps = async () =>
      (
        await cluster.db.query<{ namespace: string; status: string; started_at: Date | null }>(
          `SELECT namespace, status, started_at FROM task_execution WHERE trigger = 'catchup' ORDER BY started_at NULLS LAST, id`,
        )
      ).rows;
    // Within the rate: what started by now is at most a second's burst plus the rate over the time since the resume.
    await sleep(4_000);
    const early = await catchUps();
    const elapsedS = (Date.now() - resumedAt) / 1000;
    const startedEarly = early.filter((r) => r.started_at).length;
    expect(early).toHaveLength(11 * CATCHUP_MAX);
    expect(startedEarly).toBeGreaterThan(0);
    expect(startedEarly).toBeLessThanOrEqual(RATE * (elapsedS + 1));

    const all = await cluster.waitFor(
      async () => {
        const rows = await catchUps();
        return rows.every((r) => r.status === 'succeeded') && rows;
      },
      60_000,
      'every catch-up run to succeed',
    );
    // Round-robin: team-c's 100 runs came out in turns with team-a's, not after its 1,000 (FIFO
    // would start them last: team-c resumed after team-a). team-c's runs are one task's, each after
    // the one before, so how far they spread depends on how fast one run follows another on this
    // machine (printed); that team-c's first starts within the first two seconds' releases does not.
    const firstOfC = all.findIndex((r) => r.namespace === 'team-c');
    const lastOfC = all.findLastIndex((r) => r.namespace === 'team-c');
    console.log(
      `team-c's catch-ups started as runs ${firstOfC + 1}–${lastOfC + 1} of ${all.length}; FIFO would make them ${all.length - CATCHUP_MAX + 1}–${all.length}`,
    );
    expect(firstOfC).toBeLessThan(2 * CATCHUP_MAX);
    expect(lastOfC).toBeLessThan(all.length - CATCHUP_MAX / 2);
    const lastSlot = Math.floor((Date.now() - 2_000) / 1000) * 1000;
    const report = await cluster.report(b.ids, b.firstSlot, lastSlot);
    expectEverySlotSucceeded(report);
    const lag = await cluster.db.query<{ before: number; during: number }>(
      `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - fire_at) * 1000)
                FILTER (WHERE fire_at < $2) AS before,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - fire_at) * 1000)
                FILTER (WHERE fire_at >= $2) AS during
       FROM task_execution WHERE task_id = ANY($1::uuid[]) AND started_at IS NOT NULL`,
      [b.ids, new Date(resumedAt)],
    );
    // The quota gauge: team-a's use against its quota, and no series for namespaces without one.
    const metrics = await cluster.waitFor(
      async () => {
        const text = await (await fetch(`${cluster.schedulers[0]!.url}/metrics`)).text();
        return text.includes('punctual_namespace_quota_used{') && text;
      },
      15_000,
      'the namespace quota series',
    );
    expect(metrics).toContain('punctual_namespace_quota_used{namespace="team-a",quota="maxTasks"} 10');
    expect(metrics).toContain('punctual_namespace_quota_limit{namespace="team-a",quota="maxTasks"} 40');
    expect(metrics).not.toContain('punctual_namespace_quota_used{namespace="team-b"');
    expect(metrics).toMatch(/punctual_backlog_held\{shard="0"\} 0/);
    console.log(
      `team-b start lag p99: ${Math.round(lag.rows[0]!.before)} ms before, ${Math.round(lag.rows[0]!.during)} ms during the catch-up`,
    );
  }, 120_000);
});
