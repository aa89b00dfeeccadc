import { randomUUID } from 'node:crypto';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayService } from '../../libs/scheduler/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('the relay gives a job back to executions that lost theirs', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let redis: RedisService;
  let queue: ExecutionsQueue;
  let relay: RelayService;
  const noop = () => queue.queueFor('noop');
  let epoch: bigint;
  let taskId: string;
  let slot = 0;

  beforeAll(async () => {
    sandbox = await createSandbox();
    const config = sandbox.config();
    db = await openRepositories(config);
    redis = new RedisService(config);
    queue = new ExecutionsQueue(redis);
    relay = new RelayService(config, db.leader, queue, new Metrics());
    epoch = await db.state.bumpEpoch('relay-test');
    taskId = (
      await db.prisma.task.create({
        data: { name: 'relayed', handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's' },
      })
    ).id;
  });
  afterAll(async () => {
    await queue?.onApplicationShutdown();
    await redis?.onApplicationShutdown();
    await db?.close();
    await sandbox?.dispose();
  });

  /** An exclusive execution of `task` for the slot `at`, with `data` over it. */
  const exclusiveRow = (task: string, name: string, at: number, data: Record<string, unknown>) =>
    db.prisma.taskExecution.create({
      data: {
        id: executionIdFor(new Date(at)),
        taskId: task,
        taskName: name,
        scheduledFor: new Date(at),
        fireAt: new Date(at),
        taskVersion: 1,
        exclusive: true,
        ...data,
      },
    });

  /** A row planned for `agoMs` ago (past the relay's grace), with or without its job. */
  async function plannedRow(withJob: boolean, agoMs = 30_000): Promise<{ id: string; fireAt: Date }> {
    const id = randomUUID();
    slot += 1;
    const fireAt = new Date(Date.now() - agoMs + slot);
    await db.prisma.taskExecution.create({
      data: {
        id,
        taskId,
        taskName: 'relayed',
        scheduledFor: fireAt,
        fireAt,
        taskVersion: 1,
        status: 'scheduled',
        exclusive: false,
      },
    });
    if (withJob) await queue.pushNow([{ id, fireAt, handler: 'noop' }], Date.now() - agoMs);
    return { id, fireAt };
  }

  it('pushes again the job of a due execution whose job is gone, and only that one, carrying its fire_at and this release', async () => {
    const lost = await plannedRow(false);
    const kept = await plannedRow(true);
    const before = Date.now();
    const { requeued } = await relay.repair(epoch);
    expect(requeued).toBe(1);
    const job = (await noop().getJob(lost.id))!;
    expect(await job.getState()).toBe('waiting');
    // A worker holds it until its fire_at (an edit may have moved it ahead), and its claim records when it was released.
    expect(job.data).toMatchObject({ executionId: lost.id, fireAt: lost.fireAt.getTime() });
    expect(job.data.releasedAt).toBeGreaterThanOrEqual(before - 1_000);
    expect((await noop().getJob(kept.id))!.data.releasedAt).toBeLessThan(Date.now() - 20_000);
  });

  it('pages through every execution waiting for a job, however many: a backlog whose jobs Redis lost gets them all back in one pass', async () => {
    await noop().obliterate({ force: true });
    await db.prisma.taskExecution.deleteMany({});
    const rows = [];
    for (let i = 0; i < 25; i += 1) rows.push(await plannedRow(false, 60_000 - i * 100));
    // Pages of 10, every one full of rows without a job: the pass goes on to the next page at once.
    expect((await relay.repair(epoch, new Date(), 10)).requeued).toBe(25);
    const states = await Promise.all(rows.map((r) => noop().getJobState(r.id)));
    expect(states.filter((s) => s === 'waiting')).toHaveLength(25);
  });

  it('a backlog that has its jobs is paged one page a pass, from where the last pass stopped: none is starved behind the oldest page', async () => {
    await noop().obliterate({ force: true });
    await db.prisma.taskExecution.deleteMany({});
    const rows = [];
    for (let i = 0; i < 25; i += 1) rows.push(await plannedRow(false, 60_000 - i * 100));
    expect((await relay.repair(epoch, new Date(), 10)).requeued).toBe(25);
    // Jobs lost for the newest five only: the passes reach them although the older pages have theirs.
    for (const r of rows.slice(20)) await noop().remove(r.id);
    let requeued = 0;
    for (let pass = 0; pass < 3; pass += 1) requeued += (await relay.repair(epoch, new Date(), 10)).requeued;
    expect(requeued).toBe(5);
  });

  it("an execution fired in a group has a job while the group's job lives: not pushed again; once that job is gone, it is", async () => {
    await noop().obliterate({ force: true });
    await db.prisma.taskExecution.deleteMany({});
    const fireAt = new Date(Date.now() - 30_000);
    const ids = Array.from({ length: 3 }, () => randomUUID());
    for (const [i, id] of ids.entries()) {
      await db.prisma.taskExecution.create({
        data: {
          id,
          taskId,
          taskName: 'relayed',
          scheduledFor: new Date(fireAt.getTime() - i),
          fireAt,
          taskVersion: 1,
          status: 'scheduled',
          exclusive: false,
        },
      });
    }
    await queue.pushGroups(
      [{ fireAt, handler: 'noop', executions: ids.map((id) => ({ id, taskId })) }],
      Date.now() - 30_000,
    );
    const group = (await noop().getJobs(['waiting'])).find((j) => j.data.group);
    expect(group?.data.group?.map((m) => m.executionId)).toEqual(ids);
    expect((await relay.repair(epoch)).requeued).toBe(0);
    // The group's job ended without its members (a worker lost with it, its job dropped): each gets a job of its own.
    await group!.remove();
    expect((await relay.repair(epoch)).requeued).toBe(3);
    expect(await Promise.all(ids.map((id) => noop().getJobState(id)))).toEqual(['waiting', 'waiting', 'waiting']);
  });

  it("gives a job back in the queue of the handler the run runs: its pinned definition's, else its task's", async () => {
    await noop().obliterate({ force: true });
    await db.prisma.taskExecution.deleteMany({});
    const plain = await plannedRow(false);
    const pinned = await plannedRow(false);
    await db.prisma.taskExecution.updateMany({
      where: { id: pinned.id },
      data: { pinnedDefinition: { handler: 'send-mail' } },
    });
    expect((await relay.repair(epoch)).requeued).toBe(2);
    expect((await noop().getJob(plain.id))?.data.executionId).toBe(plain.id);
    expect(await noop().getJob(pinned.id)).toBeUndefined();
    expect((await queue.queueFor('send-mail').getJob(pinned.id))?.data.executionId).toBe(pinned.id);
  });

  it('asks Postgres again before re-adding: an execution that started (or moved on) since it was read keeps its job gone', async () => {
    const { id: started } = await plannedRow(false);
    const { id: waiting } = await plannedRow(false);
    const found = [
      { id: started, status: 'scheduled' as const, attempt: 0 },
      { id: waiting, status: 'scheduled' as const, attempt: 0 },
    ];
    // The run of `started` was claimed after the relay read it (its job then ended and was dropped).
    expect((await db.claim({ id: started, attemptId: randomUUID(), workerId: 'w1' })).kind).toBe('run');
    expect(await db.leader.stillAwaitingJob(found, epoch)).toEqual([waiting]);
    // A retry read at one attempt is not the same wait once another attempt failed.
    expect(await db.leader.stillAwaitingJob([{ id: waiting, status: 'scheduled', attempt: 1 }], epoch)).toEqual([]);
    // A deposed leader is told nothing.
    await db.state.bumpEpoch('newer');
    expect(await db.leader.stillAwaitingJob(found, epoch)).toEqual([]);
  });

  it('hands a stranded parked slot its turn in the first page, however many tasks wait parked on purpose behind earlier slots', async () => {
    await db.prisma.taskExecution.deleteMany({});
    const now = Date.now();
    const parkedAt = new Date(now - 10_000);
    // 20 tasks whose on-time slot is parked behind a catch-up still waiting for its turn (pending, due, not parked).
    for (let i = 0; i < 20; i += 1) {
      const { id, name } = await db.prisma.task.create({
        data: { name: `behind-${i}`, handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's' },
      });
      await exclusiveRow(id, name, now - 60_000, { status: 'scheduled', trigger: 'catchup' });
      await exclusiveRow(id, name, now - 5_000, { status: 'scheduled', parkedAt });
    }
    // One task whose run ahead ended by a path that hands nothing over: its parked slot is stranded.
    const stranded = await db.prisma.task.create({
      data: { name: 'stranded', handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's' },
    });
    await exclusiveRow(stranded.id, stranded.name, now - 60_000, { status: 'cancelled' });
    const waiting = await exclusiveRow(stranded.id, stranded.name, now - 5_000, { status: 'scheduled', parkedAt });

    const leading = await db.state.bumpEpoch('relay-test');
    const { handed } = await relay.repair(leading, new Date(now), 3);
    expect(handed).toBe(1);
    expect((await db.prisma.taskExecution.findFirstOrThrow({ where: { id: waiting.id } })).parkedAt).toBeNull();
    expect(await db.prisma.taskExecution.count({ where: { parkedAt: { not: null } } })).toBe(20);
  });

  it('hands a stranded slot its turn in the first page, however many tasks wait parked behind a run still going, and pages past the rest', async () => {
    await db.prisma.taskExecution.deleteMany({});
    await db.prisma.taskRunGuard.deleteMany({});
    const now = Date.now();
    const parkedAt = new Date(now - 10_000);
    const task = (name: string, id?: string) =>
      db.prisma.task.create({
        data: { ...(id ? { id } : {}), name, handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's' },
      });
    // 20 tasks whose on-time slot waits parked behind a run still going (the normal buffer_one park).
    for (let i = 0; i < 20; i += 1) {
      const { id, name } = await task(`running-${i}`);
      await exclusiveRow(id, name, now - 8_000, {
        status: 'running',
        startedAt: new Date(now - 8_000),
        leaseUntil: new Date(now + 60_000),
      });
      await exclusiveRow(id, name, now - 5_000, { status: 'scheduled', parkedAt });
    }
    // The stranded task sorts after all of them: a page that reads the parked-on-purpose first misses it.
    const stranded = await task('stranded-last', 'ffffffff-ffff-7fff-bfff-ffffffffffff');
    await exclusiveRow(stranded.id, stranded.name, now - 60_000, { status: 'cancelled' });
    const waiting = await exclusiveRow(stranded.id, stranded.name, now - 5_000, { status: 'scheduled', parkedAt });

    const leading = await db.state.bumpEpoch('relay-test');
    expect((await relay.repair(leading, new Date(now), 3)).handed).toBe(1);
    expect((await db.prisma.taskExecution.findFirstOrThrow({ where: { id: waiting.id } })).parkedAt).toBeNull();
    expect(await db.prisma.taskExecution.count({ where: { parkedAt: { not: null } } })).toBe(20);

    // Stranded slots past a page are reached by the next passes, each page after the last.
    const seven: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const { id, name } = await task(`stranded-${i}`);
      await exclusiveRow(id, name, now - 60_000 + i, { status: 'cancelled' });
      seven.push((await exclusiveRow(id, name, now - 5_000 + i, { status: 'scheduled', parkedAt })).id);
    }
    const perPass: number[] = [];
    for (let pass = 0; pass < 3; pass += 1) perPass.push((await relay.repair(leading, new Date(now), 3)).handed);
    expect(perPass).toEqual([3, 3, 1]);
    expect(await db.prisma.taskExecution.count({ where: { id: { in: seven }, parkedAt: { not: null } } })).toBe(0);
  });
});
