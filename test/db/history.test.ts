import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

/**
 * An execution's history (GET /v1/executions/:id) is the same whether a transition wrote a history
 * row or is read back from the execution's own timestamps: the happy path writes none.
 */
describe("an execution's history", () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let taskId: string;
  let slot = 0;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    taskId = (
      await db.prisma.task.create({
        data: {
          name: 'history',
          handler: 'noop',
          scheduleKind: 'cron',
          cron: '* * * * *',
          secret: 's',
          maxAttempts: 3,
        },
      })
    ).id;
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  /** A planned slot of the task; its job (as the leader pushes it) says it was released 40 ms ago. */
  async function planned(): Promise<string> {
    const id = randomUUID();
    slot += 1;
    const scheduledFor = new Date(Date.now() - 60_000 + slot * 10);
    await db.prisma.taskExecution.create({
      data: {
        id,
        taskId,
        taskName: 'history',
        scheduledFor,
        fireAt: scheduledFor,
        taskVersion: 1,
        status: 'scheduled',
        exclusive: false,
      },
    });
    return id;
  }
  const released = () => Date.now() - 40;

  const storedEvents = async (id: string) => db.prisma.executionEvent.count({ where: { executionId: id } });
  const history = async (id: string) =>
    (await db.queries.findById(id))!.events.map((e) => ({
      from: e.fromStatus,
      to: e.toStatus,
      worker: e.workerId,
      detail: e.detail,
    }));

  it('a first attempt that succeeds writes no history row, and shows release, claim and success', async () => {
    const id = await planned();
    const attemptId = randomUUID();
    expect((await db.claim({ id, attemptId, workerId: 'w1', releasedAt: released() })).kind).toBe('run');
    expect((await db.attempts.succeed([{ id, attemptId, result: { ok: true } }])).current).toEqual([true]);

    expect(await storedEvents(id)).toBe(0);
    const row = (await db.queries.findById(id))!;
    expect(await history(id)).toEqual([
      { from: 'scheduled', to: 'queued', worker: null, detail: null },
      { from: 'queued', to: 'running', worker: 'w1', detail: { attempt: 1 } },
      { from: 'running', to: 'succeeded', worker: 'w1', detail: null },
    ]);
    expect(row.events.map((e) => e.at.getTime())).toEqual([
      row.queuedAt!.getTime(),
      row.startedAt!.getTime(),
      row.finishedAt!.getTime(),
    ]);
  });

  it('a claim records the release instant its job carries: firing wrote nothing to the row', async () => {
    const id = await planned();
    const attemptId = randomUUID();
    const releasedAt = released();
    expect((await db.claim({ id, attemptId, workerId: 'w1', releasedAt })).kind).toBe('run');
    expect((await db.attempts.succeed([{ id, attemptId, result: null }])).current).toEqual([true]);

    const row = (await db.queries.findById(id))!;
    expect(row.queuedAt!.getTime()).toBe(releasedAt);
    expect(row.events.map((e) => `${e.fromStatus}→${e.toStatus}`)).toEqual([
      'scheduled→queued',
      'queued→running',
      'running→succeeded',
    ]);
    expect(await storedEvents(id)).toBe(0);
  });

  it('a claim from a job that does not say when it was released records the release as now', async () => {
    const id = randomUUID();
    slot += 1;
    const scheduledFor = new Date(Date.now() - 60_000 + slot * 10);
    await db.prisma.taskExecution.create({
      data: {
        id,
        taskId,
        taskName: 'history',
        scheduledFor,
        fireAt: scheduledFor,
        taskVersion: 1,
        status: 'scheduled',
        exclusive: false,
      },
    });
    expect((await db.claim({ id, attemptId: randomUUID(), workerId: 'w1' })).kind).toBe('run');
    const row = (await db.queries.findById(id))!;
    expect(row.queuedAt!.getTime()).toBe(row.startedAt!.getTime());
    expect(row.events.map((e) => `${e.fromStatus}→${e.toStatus}`)).toEqual(['scheduled→queued', 'queued→running']);
  });

  it('a failed first attempt keeps its claim in the history when the second attempt takes the row over', async () => {
    const id = await planned();
    const first = randomUUID();
    await db.claim({ id, attemptId: first, workerId: 'w1', releasedAt: released() });
    const firstStart = (await db.queries.findById(id))!.startedAt!;
    expect(await db.attempts.markFailed(id, first, 'boom', new Date())).toBe(true);
    const second = randomUUID();
    expect((await db.claim({ id, attemptId: second, workerId: 'w2' })).kind).toBe('run');
    expect(await db.attempts.markSucceeded(id, second, null)).toBe(true);

    expect(await history(id)).toEqual([
      { from: 'scheduled', to: 'queued', worker: null, detail: null },
      { from: 'queued', to: 'running', worker: 'w1', detail: { attempt: 1 } },
      { from: 'running', to: 'retrying', worker: 'w1', detail: { error: 'boom' } },
      { from: 'retrying', to: 'running', worker: 'w2', detail: { attempt: 2 } },
      { from: 'running', to: 'succeeded', worker: 'w2', detail: null },
    ]);
    const events = (await db.queries.findById(id))!.events;
    expect(events[1]!.at.getTime()).toBe(firstStart.getTime());
    // The first claim (written when the second replaced it), the failure and the second claim.
    expect(await storedEvents(id)).toBe(3);
  });

  it('an expired lease taken over by another worker keeps the first claim too', async () => {
    const id = await planned();
    await db.claim({ id, attemptId: randomUUID(), workerId: 'w1', releasedAt: released() }, { leaseMs: 1 });
    await db.clockPasses((await db.queries.findById(id))!.leaseUntil!, 'the first lease');
    expect((await db.claim({ id, attemptId: randomUUID(), workerId: 'w2' })).kind).toBe('run');
    expect((await history(id)).map((e) => `${e.from}→${e.to}@${e.worker}`)).toEqual([
      'scheduled→queued@null',
      'queued→running@w1',
      'running→running@w2',
    ]);
  });

  it('a transition written as a history row by an earlier version is not shown twice', async () => {
    const id = await planned();
    const attemptId = randomUUID();
    await db.claim({ id, attemptId, workerId: 'w1', releasedAt: released() });
    await db.attempts.markSucceeded(id, attemptId, null);
    const row = (await db.queries.findById(id))!;
    await db.prisma.executionEvent.createMany({
      data: [
        {
          executionId: id,
          scheduledFor: row.scheduledFor,
          fromStatus: 'scheduled',
          toStatus: 'queued',
          at: row.queuedAt!,
        },
        {
          executionId: id,
          scheduledFor: row.scheduledFor,
          fromStatus: 'queued',
          toStatus: 'running',
          at: row.startedAt!,
          workerId: 'w1',
          detail: { attempt: 1 },
        },
        {
          executionId: id,
          scheduledFor: row.scheduledFor,
          fromStatus: 'running',
          toStatus: 'succeeded',
          at: row.finishedAt!,
          workerId: 'w1',
        },
      ],
    });
    expect((await history(id)).map((e) => e.to)).toEqual(['queued', 'running', 'succeeded']);
  });
});
