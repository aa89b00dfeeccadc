import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

/**
 * The peer: a bare BullMQ worker with a no-op processor (or one that waits PEER_JOB_MS), run as its own process like Punctual's
 * worker role. It records, per job, the instant the job was due (a job scheduler's slot, else the
 * time it was added), when the processor started and when it returned, and hands them to the
 * parent over IPC on request. Started by {@link PeerWorker}.
 */
const { PEER_REDIS_URL, PEER_PREFIX, PEER_QUEUE, PEER_CONCURRENCY, PEER_JOB_MS } = process.env;
const jobMs = Number(PEER_JOB_MS ?? 0);
const records: number[] = [];

const worker = new Worker(
  PEER_QUEUE!,
  async (job) => {
    const started = Date.now();
    if (jobMs > 0) await new Promise((resolve) => setTimeout(resolve, jobMs));
    // A job scheduler's job id is `repeat:<scheduler id>:<slot millis>`.
    const slot = /^repeat:.*:(\d+)$/.exec(job.id ?? '')?.[1];
    records.push(slot ? Number(slot) : job.timestamp, started, Date.now());
  },
  {
    connection: new Redis(PEER_REDIS_URL!, { maxRetriesPerRequest: null }),
    prefix: PEER_PREFIX!,
    concurrency: Number(PEER_CONCURRENCY),
    removeOnComplete: { count: 1000 },
  },
);
worker.on('error', (error) => console.error('peer worker error', error));
await worker.waitUntilReady();
process.send!({ kind: 'ready' });

process.on('message', (message: { kind: string }) => {
  if (message.kind === 'report') process.send!({ kind: 'report', records });
  if (message.kind === 'count') process.send!({ kind: 'count', count: records.length / 3 });
  if (message.kind === 'stop') void worker.close().then(() => process.exit(0));
});
