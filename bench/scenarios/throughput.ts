import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { PlannedExecution } from '../../libs/planning/src/index.js';
import { EXECUTION_JOB_OPTIONS } from '../../libs/queue/src/index.js';
import { PLAN_STRIDE_MS } from '../../libs/scheduler/src/index.js';
import { REDIS_URL } from '../../test/support/env.js';
import { openSandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { InProcessScheduler } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';

export interface ThroughputResult {
  tasks: number;
  slots: number;
  /** Slots per second through `planDueSlots` (fence, lock, compute, insert, advance cursors). */
  plannedPerSecond: number;
  /** Slots per second through the dispatcher (`addBulk`; firing writes nothing per row), one call per instant. */
  firedPerSecond: number;
  /** The same rows through a bare multi-row `INSERT … ON CONFLICT DO NOTHING`, statement for statement. */
  rawInsertPerSecond: number;
  /** The same jobs through a bare `addBulk`, call for call. */
  rawAddBulkPerSecond: number;
  /** Statements the planner's batches would have: rows per raw INSERT. */
  rowsPerStatement: number;
}

/** The planner locks this many tasks per transaction (PlannerService's PLAN_BATCH). */
const TASKS_PER_BATCH = 500;

/**
 * Scenario 3: `tasks` every-second tasks whose cursors are all due, planned `lookaheadS` seconds
 * ahead — first by Punctual's planner and dispatcher (built in this process, as the scheduler
 * role wires them), then the same rows and jobs through the bare ceilings: one multi-row INSERT per
 * planner batch and one `addBulk` per fire instant.
 */
export async function benchThroughput(tasks: number, lookaheadS: number): Promise<ThroughputResult> {
  const sandbox = await openSandbox(undefined, 'bench');
  const db = new pg.Client({ connectionString: sandbox.databaseUrl });
  await db.connect();
  // The planner plans about a stride beyond the lookahead (each task to its phase of it): together they make about `lookaheadS`.
  const lookaheadMs = Math.max(0, lookaheadS * 1000 - PLAN_STRIDE_MS);
  const scheduler = await InProcessScheduler.open(
    sandbox.config({ LOOKAHEAD_MS: String(lookaheadMs), LOG_LEVEL: 'warn' }),
  );
  try {
    const epoch = await scheduler.lead();
    const now = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await insertTasks(db, tasks, { prefix: 'throughput', nextRunAt: now });

    let t0 = performance.now();
    let planned: PlannedExecution[] = [];
    for (;;) {
      const batch = await scheduler.planner.planDueSlots(epoch, () => now);
      if (batch.length === 0) break;
      planned = planned.concat(batch);
    }
    const planSeconds = (performance.now() - t0) / 1000;

    const instants = groupByFireAt(planned);
    t0 = performance.now();
    for (const due of instants) await scheduler.dispatcher.push(due);
    const fireSeconds = (performance.now() - t0) / 1000;

    const rowsPerStatement = Math.round(planned.length / Math.ceil(tasks / TASKS_PER_BATCH));
    const rawInsertSeconds = await rawInsert(db, planned, rowsPerStatement);
    const rawAddBulkSeconds = await rawAddBulk(sandbox.redisPrefix, instants);
    return {
      tasks,
      slots: planned.length,
      plannedPerSecond: planned.length / planSeconds,
      firedPerSecond: planned.length / fireSeconds,
      rawInsertPerSecond: planned.length / rawInsertSeconds,
      rawAddBulkPerSecond: planned.length / rawAddBulkSeconds,
      rowsPerStatement,
    };
  } finally {
    await scheduler.close();
    await db.end();
    await sandbox.dispose();
  }
}

function groupByFireAt(rows: PlannedExecution[]): PlannedExecution[][] {
  const groups = new Map<number, PlannedExecution[]>();
  for (const row of rows) {
    const at = row.fireAt.getTime();
    const group = groups.get(at);
    if (group) group.push(row);
    else groups.set(at, [row]);
  }
  return [...groups.entries()].sort((a, b) => a[0] - b[0]).map(([, group]) => group);
}

/**
 * The planned rows again (new ids, each slot half a second later: never one of the planned whole
 * seconds, and in the day's partition that holds them), `perStatement` rows per INSERT.
 */
async function rawInsert(db: pg.Client, rows: PlannedExecution[], perStatement: number): Promise<number> {
  const shiftMs = 500;
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    await db.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, trigger, status, task_version, exclusive)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::execution_trigger[], $7::execution_status[], $8::int[], $9::bool[])
       ON CONFLICT (task_id, scheduled_for) DO NOTHING`,
      [
        chunk.map(() => randomUUID()),
        chunk.map((r) => r.taskId),
        chunk.map((r) => r.taskName),
        chunk.map((r) => new Date(r.scheduledFor.getTime() + shiftMs)),
        chunk.map((r) => new Date(r.fireAt.getTime() + shiftMs)),
        chunk.map((r) => r.trigger),
        chunk.map(() => 'scheduled'),
        chunk.map((r) => r.taskVersion),
        chunk.map((r) => r.exclusive),
      ],
    );
  }
  return (performance.now() - t0) / 1000;
}

async function rawAddBulk(prefix: string, instants: PlannedExecution[][]): Promise<number> {
  const queue = new Queue('ceiling', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  try {
    const t0 = performance.now();
    for (const due of instants) {
      await queue.addBulk(
        due.map((e) => ({
          name: 'execution',
          data: { executionId: e.id },
          opts: { ...EXECUTION_JOB_OPTIONS, jobId: `c-${e.id}` },
        })),
      );
    }
    return (performance.now() - t0) / 1000;
  } finally {
    await queue.close();
  }
}

/** Scenario 3 as table rows: 20,000 tasks × 5 s of slots (quick: 1,000 × 5 s). */
export async function throughputScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = opts.quick ? await benchThroughput(1_000, 5) : await benchThroughput(20_000, 5);
  const rate = (n: number) => `${Math.round(n).toLocaleString('en')} slots/s`;
  const scenario = `throughput, ${r.tasks.toLocaleString('en')} every-second tasks, ${r.slots.toLocaleString('en')} slots`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'planned (fence, lock, compute, insert, cursors)',
      punctual: rate(r.plannedPerSecond),
      peer: `raw INSERT … ON CONFLICT ${rate(r.rawInsertPerSecond)} (${r.rowsPerStatement} rows/statement)`,
      ratio: ratio(r.plannedPerSecond, r.rawInsertPerSecond),
      target: '≥ 30,000 slots/s',
      met: r.plannedPerSecond >= 30_000,
    },
    {
      scenario,
      measure: 'fired (addBulk, nothing written per row)',
      punctual: rate(r.firedPerSecond),
      peer: `raw addBulk ${rate(r.rawAddBulkPerSecond)}`,
      ratio: ratio(r.firedPerSecond, r.rawAddBulkPerSecond),
      target: '≥ 20,000 slots/s',
      met: r.firedPerSecond >= 20_000,
    },
  ];
  const expected = r.tasks * 5;
  const problems =
    Math.abs(r.slots - expected) > r.tasks ? [`throughput: planned ${r.slots} slots, expected about ${expected}`] : [];
  return { rows, data: r, problems };
}
