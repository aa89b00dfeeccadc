import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';
import { OwnRedis } from '../support/redis-server.js';

/** What a window of the run cost: runs started, and the work counted for them. */
interface Window {
  started: number;
  /**
   * Reads of executions for their claims: each claim reads its row (the one-statement claim reads
   * and writes it), and one the one-statement claim did not start reads it again to judge it.
   */
  claimReads: number;
  /** BullMQ script calls (EVALSHA) the Redis server ran. */
  scripts: number;
  verdicts: Record<string, number>;
}

const TASKS = 200;
/** Due slots each task has piled up when the worker comes back. */
const BACKLOG = 10;

/**
 * DESIGN §5 "Graceful under overload", counted: no per-run work grows with the backlog. 200
 * every-second tasks run on time for a while, then the worker is frozen (SIGSTOP) until each task
 * has 10 due slots (2,000 runs behind), and let go. The backlog drains with the work per run that
 * started — claim reads, BullMQ script calls — of the on-time run (plus 10 %): no slot bounces
 * through the queue waiting its turn, nothing re-reads or rescans per run. Counts, not times: the
 * Redis server is the test's own (its command counters are this cluster's alone), and the claims
 * are the worker's own counters.
 */
describe('fault: a backlog costs no more per run than running on time', () => {
  let cluster: Cluster;
  let redis: OwnRedis;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    cluster = await Cluster.start({ schedulers: 1, workers: 1, env: { REDIS_URL: redis.url, LOG_LEVEL: 'warn' } });
  });
  afterAll(async () => {
    await cluster?.stop();
    await redis?.stop();
  });

  /** The worker's counters and the Redis server's script calls, now. */
  async function counters(): Promise<Omit<Window, 'started'>> {
    const metrics = await (await fetch(`${cluster.workers[0]!.url}/metrics`)).text();
    const value = (pattern: RegExp) => [...metrics.matchAll(pattern)].reduce((sum, m) => sum + Number(m[1]), 0);
    const verdicts: Record<string, number> = {};
    for (const m of metrics.matchAll(/^punctual_claims_total\{verdict="(\w+)"\} (\d+)/gm))
      verdicts[m[1]!] = Number(m[2]);
    const stats = (await redis.command('INFO', 'commandstats')) as string;
    const claims = Object.values(verdicts).reduce((a, b) => a + b, 0);
    return {
      claimReads: claims + value(/^punctual_claim_reads_total (\d+)/gm),
      scripts: Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0),
      verdicts,
    };
  }

  /** First attempts that started in `[from, to)` (Postgres' clock). */
  async function startedBetween(from: Date, to: Date): Promise<number> {
    const { rows } = await cluster.db.query(
      `SELECT count(*)::int AS n FROM task_execution WHERE started_at >= $1 AND started_at < $2`,
      [from, to],
    );
    return rows[0].n;
  }

  async function dbNow(): Promise<Date> {
    return (await cluster.db.query('SELECT clock_timestamp() AS now')).rows[0].now;
  }

  async function measure(run: () => Promise<void>): Promise<Window> {
    const before = await counters();
    const from = await dbNow();
    await run();
    const to = await dbNow();
    const after = await counters();
    const verdicts = Object.fromEntries(
      Object.entries(after.verdicts).map(([k, v]) => [k, v - (before.verdicts[k] ?? 0)]),
    );
    return {
      started: await startedBetween(from, to),
      claimReads: after.claimReads - before.claimReads,
      scripts: after.scripts - before.scripts,
      verdicts,
    };
  }

  it('drains a backlog of 2,000 runs with the claim reads and BullMQ script calls per run of the on-time run (+10 %)', async () => {
    // Each run calls the cluster's webhook: every slot's handler run is counted outside Punctual.
    const { ids, firstSlot } = await cluster.createEverySecondTasks(TASKS, {}, { prefix: 'backlog' });
    await sleep(firstSlot + 3_000 - Date.now());
    const onTime = await measure(async () => void (await sleep(5_000)));

    const worker = cluster.workers[0]!;
    const frozenAt = Date.now();
    // Measured from before the freeze (the frozen worker answers no /metrics): what it did from then on is the backlog's.
    const behind = await measure(async () => {
      worker.signal('SIGSTOP');
      // Until every task has BACKLOG slots due and not started.
      await sleep(BACKLOG * 1_000 + 500);
      worker.signal('SIGCONT');
      // Until the backlog is gone: nothing due has been waiting for more than a second.
      await cluster.waitFor(
        async () => {
          const { rows } = await cluster.db.query(
            `SELECT count(*)::int AS n FROM task_execution WHERE status IN ('scheduled', 'queued', 'retrying') AND fire_at < clock_timestamp() - interval '1 s'`,
          );
          return rows[0].n === 0;
        },
        60_000,
        'the backlog to drain',
      );
    });
    console.log(
      `on time: ${JSON.stringify(onTime)}; frozen ${Date.now() - frozenAt} ms, then behind: ${JSON.stringify(behind)}`,
    );

    expect(onTime.started).toBeGreaterThanOrEqual(TASKS * 4);
    // The freeze left at least BACKLOG slots of every task to drain.
    expect(behind.started).toBeGreaterThanOrEqual(TASKS * BACKLOG);
    const per = (w: Window, n: number) => n / w.started;
    expect(per(behind, behind.claimReads)).toBeLessThanOrEqual(per(onTime, onTime.claimReads) * 1.1);
    expect(per(behind, behind.scripts)).toBeLessThanOrEqual(per(onTime, onTime.scripts) * 1.1);
    // No slot went round the queue for its turn: none came back later for it, and almost every
    // claim started its run in one statement (a slot found behind a run of its task is parked).
    expect(behind.verdicts.later ?? 0).toBe(0);
    expect(behind.verdicts.run ?? 0).toBeGreaterThanOrEqual(behind.started * 0.95);

    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 2_000;
    await cluster.settle(lastSlot, 30_000);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    expectEveryPromiseKept(report);
    expect(report.byStatus).toEqual({ succeeded: report.expected });
  });
});
