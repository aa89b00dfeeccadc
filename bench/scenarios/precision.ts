import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Cluster, type SlotReport } from '../../test/support/cluster.js';
import { ADMIN_URL, REDIS_URL } from '../../test/support/env.js';
import { sleep } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { type Cost, CostMeter, perRun } from '../support/cost.js';
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
  /** What Postgres and Redis did during the window, for the runs that finished in it. */
  cost: Cost;
  /** Redis commands during BullMQ's window, for the jobs it ran. */
  bullmqCost: Pick<Cost, 'runs' | 'redisCommands'>;
}

/**
 * Scenario 1: `tasks` tasks due every second for `seconds` s. Punctual: one scheduler and one worker
 * process (real roles, default settings). BullMQ: `upsertJobScheduler(every 1 s)` per task and one
 * bare worker process with the same concurrency. Measured one after the other, on the same machine.
 */
export async function benchPrecision(tasks: number, seconds: number): Promise<PrecisionResult> {
  const punctual = await punctualPrecision(tasks, seconds);
  const bullmq = await bullmqPrecision(tasks, seconds);
  return {
    tasks,
    seconds,
    punctual: punctual.lag,
    bullmq: bullmq.lag,
    accounting: punctual.accounting,
    bullmqJobs: bullmq.jobs,
    cost: punctual.cost,
    bullmqCost: bullmq.cost,
  };
}

/**
 * Punctual's side of scenario 1: one scheduler and one worker process over a sandbox of their own;
 * `via` adds to their environment (the PgBouncer scenario points DATABASE_URL at a pooler).
 */
export async function punctualPrecision(
  tasks: number,
  seconds: number,
  via: (databaseUrl: string) => Record<string, string> = () => ({}),
) {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000', ...via(sandbox.databaseUrl) },
  });
  const meter = await CostMeter.open(sandbox.databaseUrl, REDIS_URL);
  try {
    await cluster.waitForLeader();
    const firstSlot = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const ids = await insertTasks(cluster.db, tasks, { prefix: 'precision', nextRunAt: new Date(firstSlot) });
    // The first second is a warm-up (connections, JIT); the window starts after it.
    const from = firstSlot + 1000;
    const to = from + seconds * 1000;
    await sleep(from - Date.now());
    await meter.resetStatements();
    const before = await meter.read();
    await sleep(to - Date.now());
    const after = await meter.read();
    const { rows } = await cluster.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM task_execution WHERE status = 'succeeded' AND finished_at >= $1 AND finished_at < $2`,
      [new Date(before.at), new Date(after.at)],
    );
    const cost = await meter.cost(before, after, rows[0]!.n);
    await cluster.settle(to - 1000, 30_000);
    const report = await cluster.report(ids, from, to - 1000);
    const { expected, lost, doubled, unfinished, byStatus } = report;
    return {
      lag: await startLags(cluster.db, from, to),
      accounting: { expected, lost, doubled, unfinished, byStatus },
      cost,
    };
  } finally {
    await meter.close();
    await cluster.stop();
  }
}

async function bullmqPrecision(tasks: number, seconds: number) {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'precision', concurrency: CONCURRENCY });
  const queue = new Queue('precision', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  const meter = await CostMeter.open(ADMIN_URL, REDIS_URL);
  try {
    for (let i = 0; i < tasks; i += 500) {
      const ids = Array.from({ length: Math.min(500, tasks - i) }, (_, j) => `precision-${i + j}`);
      await Promise.all(
        ids.map((id) =>
          queue.upsertJobScheduler(id, { every: 1000 }, { name: 'tick', opts: { removeOnComplete: { count: 1000 } } }),
        ),
      );
    }
    const from = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const to = from + seconds * 1000;
    await sleep(from - Date.now());
    const before = await meter.read();
    await sleep(to - Date.now());
    const after = await meter.read();
    await sleep(1500);
    const all = await peer.records();
    const records = all.filter((r) => r.due >= from && r.due < to);
    const inWindow = all.filter((r) => r.finished >= before.at && r.finished < after.at).length;
    return {
      lag: summarize(records.map((r) => r.started - r.due)),
      jobs: records.length,
      cost: { runs: inWindow, redisCommands: after.redisCommands - before.redisCommands },
    };
  } finally {
    await meter.close();
    await peer.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** Scenario 1 as table rows: 10 tasks for 30 s (quick: 3 tasks for 3 s). */
export async function precisionScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  return precisionRows(await benchPrecision(opts.quick ? 3 : 10, opts.quick ? 3 : 30), { lagTarget: true });
}

/** DESIGN §10's load: 1,000 tasks every second for 30 s, one worker process (quick: 100 tasks for 5 s). */
export async function loadScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  return precisionRows(await benchPrecision(opts.quick ? 100 : 1_000, opts.quick ? 5 : 30), { lagTarget: false });
}

function precisionRows(result: PrecisionResult, { lagTarget }: { lagTarget: boolean }): ScenarioOutcome {
  const problems: string[] = [];
  const { tasks, seconds, punctual: p, bullmq: b, accounting: a, cost } = result;
  const scenario = `${lagTarget ? 'precision' : 'load'}, ${tasks.toLocaleString('en')} tasks every second, ${seconds} s`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'start lag p50',
      punctual: ms(p.p50),
      peer: `BullMQ job schedulers ${ms(b.p50)}`,
      ratio: ratio(p.p50, b.p50),
      target: lagTarget ? '≤ 5 ms, ≤ 0.2× peer' : '—',
      met: lagTarget ? p.p50 <= 5 && p.p50 <= 0.2 * b.p50 : null,
    },
    {
      scenario,
      measure: 'start lag p99',
      punctual: ms(p.p99),
      peer: ms(b.p99),
      ratio: ratio(p.p99, b.p99),
      target: lagTarget ? '≤ 25 ms, ≤ 0.2× peer' : '≤ 1.0× peer',
      met: lagTarget ? p.p99 <= 25 && p.p99 <= 0.2 * b.p99 : p.p99 <= b.p99,
    },
    {
      scenario,
      measure: 'start lag max',
      punctual: ms(p.max),
      peer: ms(b.max),
      ratio: ratio(p.max, b.max),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'slots (each ends once: run, or skipped by the overlap policy)',
      punctual: Object.entries(a.byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', '),
      peer: `${result.bullmqJobs} run of ${tasks * seconds}`,
      ratio: '—',
      target: `${a.expected}, none lost or doubled`,
      met: a.lost.length + a.doubled.length + a.unfinished.length === 0,
    },
    {
      scenario,
      measure: 'cost per successful run (planning, firing, claim, record)',
      punctual: perRun(cost),
      peer: `${(result.bullmqCost.redisCommands / Math.max(1, result.bullmqCost.runs)).toFixed(1)} Redis commands`,
      ratio: '—',
      target: '—',
      met: null,
    },
  ];
  if (a.lost.length) problems.push(`${scenario}: lost slots ${a.lost.join('; ')}`);
  if (a.doubled.length) problems.push(`${scenario}: slots that succeeded twice ${a.doubled.join(', ')}`);
  if (a.unfinished.length)
    problems.push(`${scenario}: unfinished ${a.unfinished.length} (${a.unfinished.slice(0, 3).join(', ')})`);
  return { rows, data: result, problems };
}
