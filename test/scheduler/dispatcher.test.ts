import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionDispatcher } from '../../libs/scheduler/src/index.js';
import { Metrics } from '../../libs/observability/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('firing planned executions (ExecutionDispatcher)', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let redis: RedisService;
  let queue: ExecutionsQueue;
  let dispatcher: ExecutionDispatcher;
  let epoch: bigint;

  beforeAll(async () => {
    sandbox = await createSandbox();
    const config = sandbox.config();
    db = await openRepositories(config);
    redis = new RedisService(config);
    queue = new ExecutionsQueue(redis);
    dispatcher = new ExecutionDispatcher(config, queue, db.leader, new Metrics());
    epoch = await db.state.bumpEpoch('dispatcher-test');
  });
  afterAll(async () => {
    await queue?.onApplicationShutdown();
    await redis?.onApplicationShutdown();
    await db?.close();
    await sandbox?.dispose();
  });

  /** `count` planned rows of a new every-second task, one a second back from `fireAt`, all firing at `fireAt`. */
  async function planned(name: string, count: number, fireAt: Date) {
    const task = await db.prisma.task.create({ data: { name, handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's' } });
    const rows = Array.from({ length: count }, (_, i) => ({
      id: randomUUID(), taskId: task.id, taskName: name, scheduledFor: new Date(fireAt.getTime() - i * 1000), fireAt,
      trigger: 'schedule' as const, status: 'scheduled' as const, taskVersion: 1, exclusive: false,
    }));
    await db.executions.insertPlanned(rows, db.prisma);
    return { task, rows };
  }

  it('pushes every execution as a job carrying its fire_at and release instant, then marks the rows queued', async () => {
    const fireAt = new Date(Date.now() + 60_000);
    const { task, rows } = await planned('fired', 4_500, fireAt);
    const before = Date.now();
    await dispatcher.dispatch(rows, epoch);
    expect(await db.prisma.taskExecution.count({ where: { taskId: task.id, status: 'queued' } })).toBe(rows.length);
    expect(await queue.queue.getWaitingCount()).toBe(rows.length);
    const job = await queue.queue.getJob(rows[4_321]!.id);
    expect(job?.data).toEqual({ executionId: rows[4_321]!.id, fireAt: fireAt.getTime(), releasedAt: expect.any(Number) });
    expect(job!.data.releasedAt).toBeGreaterThanOrEqual(before);
  });

  it('marks queued a moment after the push only the rows no worker has claimed: a claim records the release itself', async () => {
    const fireAt = new Date();
    const { rows } = await planned('claimed-first', 2, fireAt);
    const dispatching = dispatcher.dispatch(rows, epoch);
    // A worker takes the first job as soon as it is pushed, before the marking.
    const job = await waitForJob(rows[0]!.id);
    const claim = await db.claim({ id: job.data.executionId, attemptId: randomUUID(), workerId: 'w1', releasedAt: job.data.releasedAt });
    expect(claim.kind).toBe('claimed');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: rows[1]!.id } })).status).toBe('scheduled');
    await dispatching;
    const [first, second] = await Promise.all(rows.map((r) => db.prisma.taskExecution.findUniqueOrThrow({ where: { id: r.id } })));
    expect(first).toMatchObject({ status: 'running', queuedAt: new Date(job.data.releasedAt!) });
    // Marked as of its release, not of the marking half a second later.
    const unclaimed = await queue.queue.getJob(rows[1]!.id);
    expect(second).toMatchObject({ status: 'queued', queuedAt: new Date(unclaimed!.data.releasedAt!) });
    // Release and claim are read from the rows: no history rows.
    const events = await db.prisma.executionEvent.count({ where: { executionId: { in: rows.map((r) => r.id) } } });
    expect(events).toBe(0);
  });

  async function waitForJob(id: string) {
    for (let i = 0; i < 100; i++) {
      const job = await queue.queue.getJob(id);
      if (job) return job;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error(`no job ${id}`);
  }

  it('reports a failed marking once every chunk is pushed, with nothing left to reject unobserved', async () => {
    // Ids Postgres refuses: the first chunk's marking fails while the next chunks are still pushed.
    const due = Array.from({ length: 4_001 }, (_, i) => ({ id: `not-a-uuid-${i}`, fireAt: new Date() }));
    await expect(dispatcher.dispatch(due, epoch)).rejects.toThrow(/uuid/i);
    expect(await queue.queue.getJob(due[4_000]!.id)).toBeTruthy();
  });

  it('a deposed leader marks nothing: its marking is fenced by the epoch it had', async () => {
    const fireAt = new Date(Date.now() + 60_000);
    const { task, rows } = await planned('deposed', 2, fireAt);
    const stale = epoch;
    epoch = await db.state.bumpEpoch('successor');
    await dispatcher.dispatch(rows, stale);
    expect(await db.prisma.taskExecution.count({ where: { taskId: task.id, status: 'scheduled' } })).toBe(2);
    // The leader of the newest epoch marks them.
    await dispatcher.dispatch(rows, epoch);
    expect(await db.prisma.taskExecution.count({ where: { taskId: task.id, status: 'queued' } })).toBe(2);
  });

  it('a leader gone between push and marking leaves its rows planned: its successor pushes them again, adding no job twice and running nothing twice', async () => {
    const fireAt = new Date();
    const { task, rows } = await planned('orphaned', 2, fireAt);
    // Pushed, then deposed before the marking.
    let asked = 0;
    await dispatcher.dispatch(rows, epoch, { stillLeading: () => ++asked <= 1 });
    expect(await db.prisma.taskExecution.count({ where: { taskId: task.id, status: 'scheduled' } })).toBe(2);
    const [first, second] = await Promise.all(rows.map((r) => queue.queue.getJob(r.id)));
    // A worker ran the first; its finished job was dropped.
    const attemptId = randomUUID();
    expect((await db.claim({ id: first!.id!, attemptId, workerId: 'w1', releasedAt: first!.data.releasedAt })).kind).toBe('claimed');
    expect(await db.attempts.markSucceededMany([{ id: first!.id!, attemptId, result: null }])).toEqual([true]);
    await first!.remove();

    epoch = await db.state.bumpEpoch('successor-of-orphaned');
    await dispatcher.dispatch(rows, epoch);
    // The second's job was still waiting: not added again.
    expect((await queue.queue.getJob(rows[1]!.id))!.timestamp).toBe(second!.timestamp);
    expect(await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: rows[1]!.id } })).toMatchObject({ status: 'queued' });
    // The first gets a new job, and its claim finds the slot already run.
    const again = await queue.queue.getJob(rows[0]!.id);
    expect((await db.claim({ id: again!.id!, attemptId: randomUUID(), workerId: 'w2', releasedAt: again!.data.releasedAt })).kind).toBe('lost');
    expect(await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: rows[0]!.id } })).toMatchObject({ status: 'succeeded', attempt: 1 });
  });

  it('a leader deposed mid-dispatch pushes no further chunk', async () => {
    const due = Array.from({ length: 4_500 }, () => ({ id: randomUUID(), fireAt: new Date() }));
    let asked = 0;
    await dispatcher.dispatch(due, epoch, { stillLeading: () => ++asked === 1 });
    expect(await queue.queue.getJob(due[0]!.id)).toBeTruthy();
    expect(await queue.queue.getJob(due[2_000]!.id)).toBeFalsy();
  });
});
