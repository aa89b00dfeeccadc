import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Cluster } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { EXECUTION_JOB_OPTIONS, EXECUTIONS_QUEUE, executionJobId } from '../../libs/queue/src/index.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { statusCounts } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';

import { CONCURRENCY } from './precision.js';
import { waitFor } from '../../test/support/processes.js';
import { insertTasks } from '../../test/support/tasks.js';

export interface OverheadResult {
  executions: number;
  /** Executions per second from the first start to the last completion. */
  punctualPerSecond: number;
  bullmqPerSecond: number;
  byStatus: Record<string, number>;
}

/**
 * Scenario 4: `count` no-op executions waiting in the queue before one worker process starts.
 * Punctual's worker claims, checks, runs and records each in Postgres; the peer is a bare BullMQ
 * worker with a no-op processor and the same concurrency.
 */
export async function benchWorkerOverhead(count: number): Promise<OverheadResult> {
  const punctual = await punctualThroughput(count);
  const bullmqPerSecond = await bullmqThroughput(count);
  return { executions: count, punctualPerSecond: punctual.perSecond, bullmqPerSecond, byStatus: punctual.byStatus };
}

async function punctualThroughput(count: number) {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({ schedulers: 0, workers: 0, sandbox, env: { LOG_LEVEL: 'info' } });
  const queue = new Queue(EXECUTIONS_QUEUE, { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix: sandbox.redisPrefix });
  try {
    const [taskId] = await insertTasks(cluster.db, 1, { prefix: 'overhead', nextRunAt: new Date(Date.now() + 86_400_000), overlap: 'allow' });
    const ids = Array.from({ length: count }, () => randomUUID());
    // Planned rows of one task (overlap=allow), one slot a second, fired now: what the leader leaves behind.
    await cluster.db.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, trigger, status, queued_at, task_version, exclusive)
       SELECT u, $1, 'overhead-1', now() + n * interval '1 second', now(), 'schedule', 'queued', now(), 1, false
       FROM unnest($2::uuid[]) WITH ORDINALITY AS x(u, n)`,
      [taskId, ids],
    );
    for (let i = 0; i < count; i += 5_000) {
      await queue.addBulk(ids.slice(i, i + 5_000).map((executionId) => ({ name: 'execution', data: { executionId }, opts: { ...EXECUTION_JOB_OPTIONS, jobId: executionJobId(executionId) } })));
    }
    await cluster.add('worker');
    const span = await waitFor(
      async () => {
        const { rows } = await cluster.db.query(
          `SELECT count(*) FILTER (WHERE finished_at IS NOT NULL)::int AS done, extract(epoch FROM max(finished_at) - min(started_at)) AS seconds FROM task_execution`,
        );
        return rows[0].done >= count ? Number(rows[0].seconds) : null;
      },
      300_000,
      `${count} executions`,
      100,
    );
    return { perSecond: count / span, byStatus: await statusCounts(cluster.db) };
  } finally {
    await queue.close();
    await cluster.stop();
  }
}

async function bullmqThroughput(count: number): Promise<number> {
  const prefix = `benchpeer${process.pid}`;
  const queue = new Queue('overhead', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  let peer: PeerWorker | null = null;
  try {
    for (let i = 0; i < count; i += 5_000) {
      await queue.addBulk(Array.from({ length: Math.min(5_000, count - i) }, () => ({ name: 'noop', data: {}, opts: EXECUTION_JOB_OPTIONS })));
    }
    peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'overhead', concurrency: CONCURRENCY });
    const records = await waitFor(
      async () => {
        const seen = await peer!.records();
        return seen.length >= count ? seen : null;
      },
      300_000,
      `${count} BullMQ jobs`,
      100,
    );
    const first = Math.min(...records.map((r) => r.started));
    const last = Math.max(...records.map((r) => r.finished));
    return count / ((last - first) / 1000);
  } finally {
    await peer?.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** Scenario 4 as table rows: 20,000 executions (quick: 1,000). */
export async function workerOverheadScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const result = await benchWorkerOverhead(opts.quick ? 1_000 : 20_000);
  const { punctualPerSecond: p, bullmqPerSecond: b } = result;
  const rate = (n: number) => `${Math.round(n).toLocaleString('en')}/s`;
  const rows: Row[] = [
    {
      scenario: `worker overhead, ${result.executions.toLocaleString('en')} no-op executions, concurrency ${CONCURRENCY}`,
      measure: 'executions per second',
      punctual: rate(p),
      peer: `bare BullMQ worker ${rate(b)}`,
      ratio: ratio(p, b),
      target: '≥ 0.7× peer',
      met: p >= 0.7 * b,
    },
  ];
  const ok = result.byStatus.succeeded === result.executions;
  return { rows, data: result, problems: ok ? [] : [`worker overhead: expected ${result.executions} succeeded, got ${JSON.stringify(result.byStatus)}`] };
}
