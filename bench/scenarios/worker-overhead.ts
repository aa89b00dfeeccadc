import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Cluster } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { EXECUTION_JOB_OPTIONS, ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { statusCounts } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { CONCURRENCY } from './precision.js';
import { sleep } from '../../test/support/processes.js';
import { insertTasks } from '../../test/support/tasks.js';

export interface OverheadResult {
  executions: number;
  /** Executions per second, from the first push to the moment the bench saw the last one done. */
  punctualPerSecond: number;
  bullmqPerSecond: number;
  /** The fair ceiling: a bare BullMQ worker plus the minimal fenced writes (a batched claim and success UPDATE). */
  ceilingPerSecond: number;
  byStatus: Record<string, number>;
}

/** Jobs pushed per `addBulk`, on both sides (as the leader fires). */
const PUSH_CHUNK = 2_000;
const POLL_MS = 50;

/**
 * Scenario 4, end to end and the same way on both sides: `count` jobs pushed to a worker process
 * already running, timed by the bench's own clock from the first push until it sees the last run
 * done (polling every 50 ms). Punctual's side is `count` tasks with the default policies, one due
 * slot each as the planner leaves it (`scheduled`, nothing marked), pushed as the leader fires
 * (`pushNow`): the worker claims (read, judgement, fenced write), runs the no-op handler and
 * records the success in Postgres. The peer is a bare BullMQ worker with a no-op processor and the
 * same concurrency. Both log nothing per run (Punctual at LOG_LEVEL=warn). Punctual's runs are
 * durable (fsynced) rows with a history; the peer's are Redis entries: the ratio includes that.
 */
export async function benchWorkerOverhead(count: number): Promise<OverheadResult> {
  const punctual = await punctualThroughput(count);
  const bullmqPerSecond = await bullmqThroughput(count);
  const ceilingPerSecond = await ceilingThroughput(count);
  return {
    executions: count,
    punctualPerSecond: punctual.perSecond,
    bullmqPerSecond,
    ceilingPerSecond,
    byStatus: punctual.byStatus,
  };
}

/** `count` tasks with one due slot each, as the planner leaves them (`scheduled`, nothing marked). */
async function dueSlots(db: pg.Client, count: number): Promise<{ id: string; fire_at: Date; task_id: string }[]> {
  const ids = await insertTasks(db, count, { prefix: 'overhead', nextRunAt: new Date(Date.now() + 86_400_000) });
  const { rows } = await db.query<{ id: string; fire_at: Date; task_id: string }>(
    `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, trigger, status, task_version, exclusive)
     SELECT gen_random_uuid(), t.id, t.name, date_trunc('second', now()), date_trunc('second', now()), 'schedule', 'scheduled', t.plan_version, true
     FROM task t WHERE t.id = ANY($1::uuid[])
     RETURNING id, fire_at, task_id`,
    [ids],
  );
  return rows;
}

/** Polls until no execution is unfinished; one indexed look: polling must not cost the database what the runs do. */
async function allDone(db: pg.Client, count: number, started: number): Promise<void> {
  const unfinished = `SELECT EXISTS (SELECT 1 FROM task_execution WHERE status IN ('scheduled', 'queued', 'running', 'retrying')) AS any`;
  while ((await db.query<{ any: boolean }>(unfinished)).rows[0]!.any) {
    if (Date.now() - started > 300_000) throw new Error(`${count} executions not done after 300 s`);
    await sleep(POLL_MS);
  }
}

async function punctualThroughput(count: number) {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({ schedulers: 0, workers: 1, sandbox, env: { LOG_LEVEL: 'warn' } });
  const redis = new RedisService(sandbox.config());
  const queue = new ExecutionsQueue(redis);
  try {
    const rows = await dueSlots(cluster.db, count);
    const started = Date.now();
    for (let i = 0; i < rows.length; i += PUSH_CHUNK) {
      await queue.pushNow(
        rows.slice(i, i + PUSH_CHUNK).map((r) => ({ id: r.id, fireAt: r.fire_at, taskId: r.task_id, handler: 'noop' })),
        Date.now(),
      );
    }
    await allDone(cluster.db, count, started);
    return { perSecond: count / ((Date.now() - started) / 1000), byStatus: await statusCounts(cluster.db) };
  } finally {
    await queue.onApplicationShutdown();
    await redis.onApplicationShutdown();
    await cluster.stop();
  }
}

/**
 * The fair ceiling (DESIGN §10): the same slots in a database of their own, the same jobs pushed
 * the same way, run by a bare BullMQ worker whose processor makes only the minimal fenced writes —
 * a batched claim `UPDATE` and a batched success `UPDATE` of the row (see peer-worker.ts).
 */
async function ceilingThroughput(count: number): Promise<number> {
  const sandbox = await openSandbox(undefined, 'bench');
  const db = new pg.Client({ connectionString: sandbox.databaseUrl });
  await db.connect();
  const queue = new Queue('ceiling', {
    connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }),
    prefix: sandbox.redisPrefix,
  });
  const peer = await PeerWorker.start({
    redisUrl: REDIS_URL,
    prefix: sandbox.redisPrefix,
    queue: 'ceiling',
    concurrency: CONCURRENCY,
    databaseUrl: sandbox.databaseUrl,
  });
  try {
    const rows = await dueSlots(db, count);
    const started = Date.now();
    for (let i = 0; i < rows.length; i += PUSH_CHUNK) {
      await queue.addBulk(
        rows.slice(i, i + PUSH_CHUNK).map((r) => ({
          name: 'execution',
          data: { executionId: r.id },
          opts: { ...EXECUTION_JOB_OPTIONS, jobId: r.id },
        })),
      );
    }
    await allDone(db, count, started);
    return count / ((Date.now() - started) / 1000);
  } finally {
    await peer.stop();
    await queue.close();
    await db.end();
    await sandbox.dispose();
  }
}

async function bullmqThroughput(count: number): Promise<number> {
  const prefix = `benchpeer${process.pid}`;
  const queue = new Queue('overhead', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'overhead', concurrency: CONCURRENCY });
  try {
    const started = Date.now();
    for (let i = 0; i < count; i += PUSH_CHUNK) {
      await queue.addBulk(
        Array.from({ length: Math.min(PUSH_CHUNK, count - i) }, () => ({
          name: 'noop',
          data: {},
          opts: EXECUTION_JOB_OPTIONS,
        })),
      );
    }
    while ((await peer.count()) < count) {
      if (Date.now() - started > 300_000) throw new Error(`${count} BullMQ jobs not done after 300 s`);
      await sleep(POLL_MS);
    }
    return count / ((Date.now() - started) / 1000);
  } finally {
    await peer.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** Scenario 4 as table rows: 20,000 executions (quick: 1,000). */
export async function workerOverheadScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const result = await benchWorkerOverhead(opts.quick ? 1_000 : 20_000);
  const { punctualPerSecond: p, bullmqPerSecond: b, ceilingPerSecond: c } = result;
  const rate = (n: number) => `${Math.round(n).toLocaleString('en')}/s`;
  const scenario = `worker overhead, ${result.executions.toLocaleString('en')} no-op runs of as many tasks (default policies), concurrency ${CONCURRENCY}`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'runs per second, first push to last run seen done: against the fair ceiling',
      punctual: rate(p),
      peer: `bare BullMQ worker + the minimal fenced writes (claim and success UPDATE, batched) ${rate(c)}`,
      ratio: ratio(p, c),
      target: '≥ 0.85× ceiling',
      met: p >= 0.85 * c,
    },
    {
      scenario,
      measure: 'runs per second: against a bare BullMQ worker',
      punctual: rate(p),
      peer: `bare BullMQ worker ${rate(b)}`,
      ratio: ratio(p, b),
      target: '≥ 0.5× peer',
      met: p >= 0.5 * b,
    },
  ];
  const ok = result.byStatus.succeeded === result.executions;
  return {
    rows,
    data: result,
    problems: ok
      ? []
      : [`worker overhead: expected ${result.executions} succeeded, got ${JSON.stringify(result.byStatus)}`],
  };
}
