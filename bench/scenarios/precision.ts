import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Cluster, type SlotReport } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { sleep } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { startLags } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, type Summary, summarize } from '../support/stats.js';

/** Worker concurrency on both sides: Punctual's default WORKER_CONCURRENCY. */
export const CONCURRENCY = 50;

export interface PrecisionResult {
  tasks: number;
  seconds: number;
  /** Start lag, ms: `started_at − fire_at` of every slot in the window. */
  punctual: Summary;
  /** Start lag, ms: processor start − the job scheduler's slot (`prevMillis`). */
  bullmq: Summary;
  /** Every slot of the window accounted for (DESIGN §1): lost, doubled and unfinished must be empty. */
  accounting: Pick<SlotReport, 'expected' | 'lost' | 'doubled' | 'unfinished' | 'byStatus'>;
  /** Slots BullMQ ran in the window (expected: tasks × seconds). */
  bullmqJobs: number;
}

/**
 * Scenario 1: `tasks` tasks due every second for `seconds` s. Punctual: one scheduler and one worker
 * process (real roles, default settings). BullMQ: `upsertJobScheduler(every 1 s)` per task and one
 * bare worker process with the same concurrency. Measured one after the other, on the same machine.
 */
export async function benchPrecision(tasks: number, seconds: number): Promise<PrecisionResult> {
  const punctual = await punctualPrecision(tasks, seconds);
  const bullmq = await bullmqPrecision(tasks, seconds);
  return { tasks, seconds, punctual: punctual.lag, bullmq: bullmq.lag, accounting: punctual.accounting, bullmqJobs: bullmq.jobs };
}

async function punctualPrecision(tasks: number, seconds: number) {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({ schedulers: 1, workers: 1, sandbox, env: { LOG_LEVEL: 'info', LEADER_TTL_MS: '5000' } });
  try {
    await cluster.waitForLeader();
    const firstSlot = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const ids = await insertTasks(cluster.db, tasks, { prefix: 'precision', nextRunAt: new Date(firstSlot) });
    // The first second is a warm-up (connections, JIT); the window starts after it.
    const from = firstSlot + 1000;
    const to = from + seconds * 1000;
    await sleep(to - Date.now() + 500);
    await cluster.settle(to - 1000, 30_000);
    const report = await cluster.report(ids, from, to - 1000);
    const { expected, lost, doubled, unfinished, byStatus } = report;
    return { lag: await startLags(cluster.db, from, to), accounting: { expected, lost, doubled, unfinished, byStatus } };
  } finally {
    await cluster.stop();
  }
}

async function bullmqPrecision(tasks: number, seconds: number) {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'precision', concurrency: CONCURRENCY });
  const queue = new Queue('precision', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  try {
    for (let i = 0; i < tasks; i += 500) {
      const ids = Array.from({ length: Math.min(500, tasks - i) }, (_, j) => `precision-${i + j}`);
      await Promise.all(ids.map((id) => queue.upsertJobScheduler(id, { every: 1000 }, { name: 'tick', opts: { removeOnComplete: { count: 1000 } } })));
    }
    const from = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const to = from + seconds * 1000;
    await sleep(to - Date.now() + 1500);
    const records = (await peer.records()).filter((r) => r.due >= from && r.due < to);
    return { lag: summarize(records.map((r) => r.started - r.due)), jobs: records.length };
  } finally {
    await peer.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** Scenario 1 as table rows: 10 and 1,000 tasks for 30 s (quick: 3 tasks for 3 s). */
export async function precisionScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const sizes: [number, number][] = opts.quick ? [[3, 3]] : [[10, 30], [1_000, 30]];
  const rows: Row[] = [];
  const problems: string[] = [];
  const data: PrecisionResult[] = [];
  for (const [tasks, seconds] of sizes) {
    const result = await benchPrecision(tasks, seconds);
    data.push(result);
    const { punctual: p, bullmq: b, accounting: a } = result;
    const scenario = `precision, ${tasks.toLocaleString('en')} tasks every second, ${seconds} s`;
    const first = tasks <= 10;
    rows.push(
      { scenario, measure: 'start lag p50', punctual: ms(p.p50), peer: `BullMQ job schedulers ${ms(b.p50)}`, ratio: ratio(p.p50, b.p50), target: first ? '≤ 5 ms, ≤ 0.2× peer' : '—', met: first ? p.p50 <= 5 && p.p50 <= 0.2 * b.p50 : null },
      { scenario, measure: 'start lag p99', punctual: ms(p.p99), peer: ms(b.p99), ratio: ratio(p.p99, b.p99), target: first ? '≤ 25 ms, ≤ 0.2× peer' : '—', met: first ? p.p99 <= 25 && p.p99 <= 0.2 * b.p99 : null },
      { scenario, measure: 'start lag max', punctual: ms(p.max), peer: ms(b.max), ratio: ratio(p.max, b.max), target: '—', met: null },
      {
        scenario,
        measure: 'slots (each ends once: run, or skipped by the overlap policy)',
        punctual: Object.entries(a.byStatus).map(([status, n]) => `${n} ${status}`).join(', '),
        peer: `${result.bullmqJobs} run of ${tasks * seconds}`,
        ratio: '—',
        target: `${a.expected}, none lost or doubled`,
        met: a.lost.length + a.doubled.length + a.unfinished.length === 0,
      },
    );
    if (a.lost.length) problems.push(`precision ${tasks}: lost slots ${a.lost.join('; ')}`);
    if (a.doubled.length) problems.push(`precision ${tasks}: slots that succeeded twice ${a.doubled.join(', ')}`);
    if (a.unfinished.length) problems.push(`precision ${tasks}: unfinished ${a.unfinished.length} (${a.unfinished.slice(0, 3).join(', ')})`);
  }
  return { rows, data, problems };
}
