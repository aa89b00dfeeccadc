import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionDispatcher, GROUP_FROM, GROUP_SIZE } from '../../libs/scheduler/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { ExecutionsQueue, executionsQueueName } from '../../libs/queue/src/index.js';
import { Worker } from 'bullmq';
import { RedisService } from '../../libs/redis/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('firing planned executions (ExecutionDispatcher)', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let redis: RedisService;
  let queue: ExecutionsQueue;
  let dispatcher: ExecutionDispatcher;
  const noop = () => queue.queueFor('noop');

  beforeAll(async () => {
    sandbox = await createSandbox();
    const config = sandbox.config();
    db = await openRepositories(config);
    redis = new RedisService(config);
    queue = new ExecutionsQueue(redis);
    dispatcher = new ExecutionDispatcher(config, queue, new Metrics());
  });
  afterAll(async () => {
    await queue?.onApplicationShutdown();
    await redis?.onApplicationShutdown();
    await db?.close();
    await sandbox?.dispose();
  });

  /**
   * `count` planned rows of a new every-second task, one a second back from `fireAt`, all firing at
   * `fireAt` — or, `spread`, each a millisecond after the one before (no instant crowded enough to fire in groups).
   */
  async function planned(
    name: string,
    count: number,
    fireAt: Date,
    spread = false,
    handler = 'noop',
    trigger: 'schedule' | 'catchup' = 'schedule',
  ) {
    const task = await db.prisma.task.create({
      data: { name, handler, scheduleKind: 'cron', cron: '* * * * * *', secret: 's' },
    });
    const rows = Array.from({ length: count }, (_, i) => ({
      id: randomUUID(),
      taskId: task.id,
      taskName: name,
      scheduledFor: new Date(fireAt.getTime() - i * 1000),
      fireAt: spread ? new Date(fireAt.getTime() + i) : fireAt,
      trigger,
      status: 'scheduled' as const,
      taskVersion: 1,
      exclusive: false,
      handler,
    }));
    await db.executions.insertPlanned(rows, db.prisma);
    return { task, rows };
  }

  it('pushes every execution as a job carrying its fire_at and release instant, and writes nothing to the rows', async () => {
    const fireAt = new Date(Date.now() + 60_000);
    const { task, rows } = await planned('fired', 4_500, fireAt, true);
    const before = Date.now();
    expect(await dispatcher.push(rows)).toHaveLength(rows.length);
    expect(
      await db.prisma.taskExecution.count({ where: { taskId: task.id, status: 'scheduled', queuedAt: null } }),
    ).toBe(rows.length);
    expect(await noop().getWaitingCount()).toBe(rows.length);
    const job = await noop().getJob(rows[4_321]!.id);
    // And its task: the worker's claim then need not read back a definition it keeps.
    expect(job?.data).toEqual({
      executionId: rows[4_321]!.id,
      taskId: task.id,
      fireAt: rows[4_321]!.fireAt.getTime(),
      releasedAt: expect.any(Number),
    });
    expect(job!.data.releasedAt).toBeGreaterThanOrEqual(before);
  });

  it('fires many executions due at one instant in groups (one job each few dozen, naming them), the few of another instant one job each', async () => {
    await noop().obliterate({ force: true });
    const crowded = new Date(Date.now() + 60_000);
    const { rows: many } = await planned('crowded', GROUP_FROM + 36, crowded);
    const { rows: few } = await planned('quiet', 3, new Date(crowded.getTime() + 1_000));
    expect(await dispatcher.push([...many, ...few])).toHaveLength(many.length + few.length);
    const jobs = await noop().getJobs(['waiting']);
    const groups = jobs.filter((j) => j.data.group);
    expect(groups.map((g) => g.data.group!.length).sort((a, b) => a - b)).toEqual([
      GROUP_SIZE - (GROUP_SIZE * 4 - many.length),
      GROUP_SIZE,
      GROUP_SIZE,
      GROUP_SIZE,
    ]);
    expect(new Set(groups.flatMap((g) => g.data.group!.map((m) => m.executionId)))).toEqual(
      new Set(many.map((r) => r.id)),
    );
    expect(
      groups.every(
        (g) => g.data.fireAt === crowded.getTime() && g.data.group!.every((m) => m.taskId === many[0]!.taskId),
      ),
    ).toBe(true);
    expect(
      jobs
        .filter((j) => !j.data.group)
        .map((j) => j.id)
        .sort(),
    ).toEqual(few.map((r) => r.id).sort());
  });

  it("pushes each execution to its handler's queue only — a crowded instant of two handlers in groups of each — and nothing to another's", async () => {
    await noop().obliterate({ force: true });
    const at = new Date(Date.now() + 60_000);
    const { rows: mails } = await planned('mails', GROUP_FROM, at, false, 'send-mail');
    const { rows: noops } = await planned('noops', GROUP_FROM, at);
    const { rows: one } = await planned('one-report', 1, new Date(at.getTime() + 1_000), false, 'report');
    expect(await dispatcher.push([...mails, ...noops, ...one])).toHaveLength(2 * GROUP_FROM + 1);
    const members = async (handler: string) =>
      (await queue.queueFor(handler).getJobs(['waiting'])).flatMap((j) =>
        (j.data.group ?? [{ executionId: j.data.executionId }]).map((m) => m.executionId),
      );
    expect(new Set(await members('send-mail'))).toEqual(new Set(mails.map((r) => r.id)));
    expect(new Set(await members('noop'))).toEqual(new Set(noops.map((r) => r.id)));
    expect(await members('report')).toEqual([one[0]!.id]);
    expect(await queue.queueFor('send-mail').getJobCounts('waiting')).toEqual({
      waiting: Math.ceil(GROUP_FROM / GROUP_SIZE),
    });
  });

  it('puts backlog runs (single or grouped) behind every on-time job: a worker takes the on-time ones first', async () => {
    await noop().obliterate({ force: true });
    const past = new Date(Date.now() - 60_000);
    const { rows: backlog } = await planned('caught-up', 3, past, true, 'noop', 'catchup');
    const { rows: crowd } = await planned(
      'caught-up-crowd',
      GROUP_FROM,
      new Date(past.getTime() - 1_000),
      false,
      'noop',
      'catchup',
    );
    await dispatcher.push([...backlog, ...crowd]);
    const { rows: onTime } = await planned('on-time', 2, new Date(), true);
    await dispatcher.push(onTime);
    expect(await noop().getJobCounts('waiting', 'prioritized')).toEqual({
      waiting: 2,
      prioritized: 3 + Math.ceil(GROUP_FROM / GROUP_SIZE),
    });
    const taken: string[] = [];
    const worker = new Worker(
      executionsQueueName('noop'),
      async (job) => {
        taken.push(job.data.executionId);
      },
      { connection: redis.connect(), prefix: redis.prefix, concurrency: 1 },
    );
    try {
      await expect.poll(() => taken.length, { timeout: 10_000 }).toBe(5 + Math.ceil(GROUP_FROM / GROUP_SIZE));
    } finally {
      await worker.close();
    }
    expect(new Set(taken.slice(0, 2))).toEqual(new Set(onTime.map((r) => r.id)));
  });

  it('the claim records the release its job carries: the history shows it, with no history row written', async () => {
    const { rows } = await planned('claimed', 1, new Date());
    await dispatcher.push(rows);
    const job = (await noop().getJob(rows[0]!.id))!;
    const claim = await db.claim({
      id: job.data.executionId,
      attemptId: randomUUID(),
      workerId: 'w1',
      releasedAt: job.data.releasedAt,
    });
    expect(claim.kind).toBe('run');
    expect(await db.prisma.taskExecution.findFirstOrThrow({ where: { id: rows[0]!.id } })).toMatchObject({
      status: 'running',
      queuedAt: new Date(job.data.releasedAt!),
    });
    expect(await db.prisma.executionEvent.count({ where: { executionId: rows[0]!.id } })).toBe(0);
  });

  it('pushed again (a new leader adopting what its predecessor pushed), a waiting job is not added twice and a slot that ran does not run again', async () => {
    const { rows } = await planned('orphaned', 2, new Date());
    await dispatcher.push(rows);
    const [first, second] = await Promise.all(rows.map((r) => noop().getJob(r.id)));
    // A worker ran the first; its finished job was dropped.
    const attemptId = randomUUID();
    expect(
      (await db.claim({ id: first!.id!, attemptId, workerId: 'w1', releasedAt: first!.data.releasedAt })).kind,
    ).toBe('run');
    expect((await db.attempts.succeed([{ id: first!.id!, attemptId, result: null }])).current).toEqual([true]);
    await first!.remove();

    await dispatcher.push(rows);
    // The second's job was still waiting: not added again.
    expect((await noop().getJob(rows[1]!.id))!.timestamp).toBe(second!.timestamp);
    // The first gets a new job, and its claim finds the slot already run.
    const again = await noop().getJob(rows[0]!.id);
    expect(
      await db.claim({ id: again!.id!, attemptId: randomUUID(), workerId: 'w2', releasedAt: again!.data.releasedAt }),
    ).toEqual({ kind: 'dropped', why: 'lost' });
    expect(await db.prisma.taskExecution.findFirstOrThrow({ where: { id: rows[0]!.id } })).toMatchObject({
      status: 'succeeded',
      attempt: 1,
    });
  });

  it('a leader deposed mid-dispatch pushes no further chunk', async () => {
    const now = Date.now();
    const due = Array.from({ length: 4_500 }, (_, i) => ({
      id: randomUUID(),
      fireAt: new Date(now + i),
      handler: 'noop',
    }));
    let asked = 0;
    expect(await dispatcher.push(due, { stillLeading: () => ++asked === 1 })).toHaveLength(2_000);
    expect(await noop().getJob(due[0]!.id)).toBeTruthy();
    expect(await noop().getJob(due[2_000]!.id)).toBeFalsy();
  });
});
