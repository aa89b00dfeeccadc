import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayService } from '../../libs/scheduler/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('the relay gives a job back to executions that lost theirs', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let redis: RedisService;
  let queue: ExecutionsQueue;
  let relay: RelayService;
  let epoch: bigint;
  let taskId: string;
  let slot = 0;

  beforeAll(async () => {
    sandbox = await createSandbox();
    const config = sandbox.config();
    db = await openRepositories(config);
    redis = new RedisService(config);
    queue = new ExecutionsQueue(redis);
    relay = new RelayService(db.leader, queue);
    epoch = await db.state.bumpEpoch('relay-test');
    taskId = (await db.prisma.task.create({ data: { name: 'relayed', handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's' } })).id;
  });
  afterAll(async () => {
    await queue?.onApplicationShutdown();
    await redis?.onApplicationShutdown();
    await db?.close();
    await sandbox?.dispose();
  });

  /** A row released `agoMs` ago (past the relay's patience), with or without its job. */
  async function queuedRow(withJob: boolean, agoMs = 30_000): Promise<string> {
    const id = randomUUID();
    slot += 1;
    const at = new Date(Date.now() - 60_000 + slot);
    await db.prisma.taskExecution.create({ data: { id, taskId, taskName: 'relayed', scheduledFor: at, fireAt: at, taskVersion: 1, status: 'queued', exclusive: false, queuedAt: new Date(Date.now() - agoMs) } });
    if (withJob) await queue.enqueueNow([{ id, fireAt: at }], Date.now() - agoMs);
    return id;
  }

  it('re-adds the job of a queued execution whose job is gone, and only that one', async () => {
    const lost = await queuedRow(false);
    const kept = await queuedRow(true);
    const { requeued } = await relay.repair(epoch);
    expect(requeued).toBe(1);
    expect(await queue.queue.getJobState(lost)).toBe('waiting');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: lost } })).queuedAt!.getTime()).toBeGreaterThan(Date.now() - 5_000);
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: kept } })).queuedAt!.getTime()).toBeLessThan(Date.now() - 20_000);
  });

  it('asks Postgres again before re-adding: an execution that started (or moved on) since it was read keeps its job gone', async () => {
    const started = await queuedRow(false);
    const waiting = await queuedRow(false);
    const found = [
      { id: started, status: 'queued' as const, attempt: 0 },
      { id: waiting, status: 'queued' as const, attempt: 0 },
    ];
    // The run of `started` was claimed after the relay read it (its job then ended and was dropped).
    expect((await db.claim({ id: started, attemptId: randomUUID(), workerId: 'w1' })).kind).toBe('claimed');
    expect(await db.leader.stillAwaitingJob(found, epoch)).toEqual([waiting]);
    // A retry read at one attempt is not the same wait once another attempt failed.
    expect(await db.leader.stillAwaitingJob([{ id: waiting, status: 'queued', attempt: 1 }], epoch)).toEqual([]);
    // A deposed leader is told nothing.
    await db.state.bumpEpoch('newer');
    expect(await db.leader.stillAwaitingJob(found, epoch)).toEqual([]);
  });
});
