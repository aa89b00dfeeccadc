import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Cluster } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { sleep, waitFor } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { statusCounts } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms } from '../support/stats.js';
import { CONCURRENCY } from './precision.js';

export interface BurstSide {
  /** ms from the common slot to the last start / the last completion. */
  lastStart: number;
  lastFinish: number;
  runs: number;
}

export interface BurstResult {
  tasks: number;
  punctual: BurstSide & { byStatus: Record<string, number> };
  bullmq: BurstSide;
}

/** Time for both sides to set up before the common slot: Punctual inserts and plans, BullMQ upserts. */
const leadMs = (tasks: number) => (tasks > 1_000 ? 5_000 : 2_500) + tasks;

/**
 * Scenario 2: `tasks` one-off tasks due in the same second. Punctual: one scheduler and one worker
 * process, every run recorded in Postgres. BullMQ: one job scheduler per task with a cron pattern for
 * that second and one bare worker process with the same concurrency.
 */
export async function benchBurst(tasks: number): Promise<BurstResult> {
  return { tasks, punctual: await punctualBurst(tasks), bullmq: await bullmqBurst(tasks) };
}

async function punctualBurst(tasks: number) {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000' },
  });
  try {
    await cluster.waitForLeader();
    const slot = Math.ceil((Date.now() + leadMs(tasks)) / 1000) * 1000;
    await insertTasks(cluster.db, tasks, { prefix: 'burst', nextRunAt: new Date(slot), runAt: new Date(slot) });
    await sleep(slot - Date.now());
    const done = await waitFor(
      async () => {
        const { rows } = await cluster.db.query(
          `SELECT count(*) FILTER (WHERE status IN ('succeeded', 'dead', 'skipped', 'missed', 'cancelled'))::int AS done,
                  extract(epoch FROM max(started_at) - $1::timestamptz) * 1000 AS last_start,
                  extract(epoch FROM max(finished_at) - $1::timestamptz) * 1000 AS last_finish
           FROM task_execution`,
          [new Date(slot)],
        );
        return rows[0].done >= tasks ? rows[0] : null;
      },
      120_000,
      `${tasks} burst executions to finish`,
      50,
    );
    return {
      lastStart: Number(done.last_start),
      lastFinish: Number(done.last_finish),
      runs: done.done as number,
      byStatus: await statusCounts(cluster.db),
    };
  } finally {
    await cluster.stop();
  }
}

async function bullmqBurst(tasks: number) {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'burst', concurrency: CONCURRENCY });
  const queue = new Queue('burst', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  try {
    const slot = Math.ceil((Date.now() + leadMs(tasks)) / 1000) * 1000;
    const at = new Date(slot);
    const pattern = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} *`;
    for (let i = 0; i < tasks; i += 500) {
      const ids = Array.from({ length: Math.min(500, tasks - i) }, (_, j) => `burst-${i + j}`);
      await Promise.all(
        ids.map((id) =>
          queue.upsertJobScheduler(
            id,
            { pattern, tz: 'UTC' },
            { name: 'burst', opts: { removeOnComplete: { count: 1000 } } },
          ),
        ),
      );
    }
    if (Date.now() > slot) throw new Error('BullMQ job schedulers were not all upserted before the slot');
    const records = await waitFor(
      async () => {
        const seen = (await peer.records()).filter((r) => r.due === slot);
        return seen.length >= tasks ? seen : null;
      },
      120_000,
      `${tasks} BullMQ burst jobs`,
      100,
    );
    return {
      lastStart: Math.max(...records.map((r) => r.started)) - slot,
      lastFinish: Math.max(...records.map((r) => r.finished)) - slot,
      runs: records.length,
    };
  } finally {
    await peer.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** Scenario 2 as table rows: 10,000 tasks (quick: 200). */
export async function burstScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const result = await benchBurst(opts.quick ? 200 : 10_000);
  const { punctual: p, bullmq: b } = result;
  const scenario = `burst, ${result.tasks.toLocaleString('en')} tasks due in the same second`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'last start after the slot',
      punctual: ms(p.lastStart),
      peer: `BullMQ job schedulers ${ms(b.lastStart)}`,
      ratio: ratio(p.lastStart, b.lastStart),
      target: '≤ 1.0× peer',
      met: p.lastStart <= b.lastStart,
    },
    {
      scenario,
      measure: 'last completion after the slot',
      punctual: ms(p.lastFinish),
      peer: ms(b.lastFinish),
      ratio: ratio(p.lastFinish, b.lastFinish),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'runs (history in Postgres)',
      punctual: `${p.byStatus.succeeded ?? 0} succeeded of ${result.tasks}`,
      peer: `${b.runs} (no history)`,
      ratio: '—',
      target: 'all',
      met: p.byStatus.succeeded === result.tasks,
    },
  ];
  const problems =
    p.byStatus.succeeded === result.tasks
      ? []
      : [`burst: expected ${result.tasks} succeeded, got ${JSON.stringify(p.byStatus)}`];
  return { rows, data: result, problems };
}
