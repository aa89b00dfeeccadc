import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Batcher } from '../../libs/worker/src/batcher.js';

/**
 * The peer: a bare BullMQ worker with a no-op processor (or one that waits PEER_JOB_MS), run as its own process like Punctual's
 * worker role. It records, per job, the instant the job was due (a job scheduler's slot, else the
 * time it was added), when the processor started and when it returned, and hands them to the
 * parent over IPC on request. Started by {@link PeerWorker}.
 *
 * With PEER_DATABASE_URL it is the fair ceiling of a worker that keeps its runs in Postgres: the
 * same bare worker, whose processor does the least a fenced run must — a claim `UPDATE` and a
 * success `UPDATE` of the job's `task_execution` row (same table, same indexes as Punctual's),
 * each batched across concurrent jobs as Punctual batches them — and nothing else.
 */
const { PEER_REDIS_URL, PEER_PREFIX, PEER_QUEUE, PEER_CONCURRENCY, PEER_JOB_MS, PEER_DATABASE_URL } = process.env;
const jobMs = Number(PEER_JOB_MS ?? 0);
const records: number[] = [];

/** The minimal fenced writes, batched (3 statements of each kind in flight, up to 200 rows each). */
function fencedWrites(url: string) {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const claims = new Batcher<string, string | null>(
    async (ids) => {
      const { rows } = await pool.query<{ id: string; attempt_id: string }>({
        name: 'ceiling.claim',
        text: `UPDATE task_execution SET status = 'running', attempt = attempt + 1, attempt_id = gen_random_uuid(), worker_id = 'ceiling',
                 started_at = now(), heartbeat_at = now(), lease_until = now() + interval '30 s'
               WHERE id = ANY($1::uuid[]) AND status IN ('scheduled', 'queued') RETURNING id, attempt_id`,
        values: [ids],
      });
      const byId = new Map(rows.map((r) => [r.id, r.attempt_id]));
      return ids.map((id) => byId.get(id) ?? null);
    },
    null,
    200,
    3,
  );
  const successes = new Batcher<{ id: string; attemptId: string }, boolean>(
    async (items) => {
      const { rows } = await pool.query<{ id: string }>({
        name: 'ceiling.succeed',
        text: `UPDATE task_execution e SET status = 'succeeded', finished_at = now(), lease_until = NULL
               FROM unnest($1::uuid[], $2::uuid[]) AS r(id, attempt_id)
               WHERE e.id = ANY($1::uuid[]) AND e.id = r.id AND e.attempt_id = r.attempt_id AND e.status = 'running' RETURNING e.id`,
        values: [items.map((i) => i.id), items.map((i) => i.attemptId)],
      });
      const done = new Set(rows.map((r) => r.id));
      return items.map((i) => done.has(i.id));
    },
    null,
    200,
    3,
  );
  return {
    async run(executionId: string): Promise<void> {
      const attemptId = await claims.run(executionId);
      if (attemptId) await successes.run({ id: executionId, attemptId });
    },
    close: () => pool.end(),
  };
}

const fenced = PEER_DATABASE_URL ? fencedWrites(PEER_DATABASE_URL) : null;

const worker = new Worker(
  PEER_QUEUE!,
  async (job) => {
    const started = Date.now();
    if (fenced) await fenced.run((job.data as { executionId: string }).executionId);
    if (jobMs > 0) await new Promise((resolve) => setTimeout(resolve, jobMs));
    // A job scheduler's job id is `repeat:<scheduler id>:<slot millis>`.
    const slot = /^repeat:.*:(\d+)$/.exec(job.id ?? '')?.[1];
    records.push(slot ? Number(slot) : job.timestamp, started, Date.now());
  },
  {
    connection: new Redis(PEER_REDIS_URL!, { maxRetriesPerRequest: null }),
    prefix: PEER_PREFIX!,
    concurrency: Number(PEER_CONCURRENCY),
    // The ceiling keeps no finished job, as Punctual's queue does; the bare peer as BullMQ users commonly do.
    removeOnComplete: { count: fenced ? 0 : 1000 },
  },
);
worker.on('error', (error) => console.error('peer worker error', error));
await worker.waitUntilReady();
process.send!({ kind: 'ready' });

process.on('message', (message: { kind: string }) => {
  if (message.kind === 'report') process.send!({ kind: 'report', records });
  if (message.kind === 'count') process.send!({ kind: 'count', count: records.length / 3 });
  if (message.kind === 'stop')
    void worker
      .close()
      .then(() => fenced?.close())
      .then(() => process.exit(0));
});
