import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phasedLookaheadMs } from '../../libs/planning/src/index.js';
import { FencedOutError, PLAN_STRIDE_MS, PlannerService } from '../../libs/scheduler/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('planning due slots into executions', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let planner: PlannerService;

  beforeAll(async () => {
    sandbox = await createSandbox();
    const config = sandbox.config({ LOOKAHEAD_MS: '2000' });
    db = await openRepositories(config);
    planner = new PlannerService(config, db.prisma, db.cursors, db.executions, db.state, new Metrics(), db.room);
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  const createTask = (name: string, cursor: Date) =>
    db.prisma.task.create({
      data: { name, handler: 'noop', scheduleKind: 'cron', cron: '* * * * * *', secret: 's', nextRunAt: cursor },
    });

  it('planning the same window twice creates each execution once', async () => {
    const epoch = await db.state.bumpEpoch('p1');
    const t0 = new Date(Math.ceil(Date.now() / 1000) * 1000);
    const task = await createTask('twice', t0);
    const now = () => new Date(t0.getTime() + 500);
    const first = await planner.planDueSlots(epoch, now);
    // Rewind the cursor as a crashed planner would leave it, and plan the same window again.
    await db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: t0 } });
    const second = await planner.planDueSlots(epoch, now);
    // Due within the lookahead (2 s), planned about a stride further (to the task's own phase of it): one cursor move for every slot of it.
    const horizon = 500 + phasedLookaheadMs(task.id, t0.getTime() + 500, 2000, PLAN_STRIDE_MS);
    const window = Array.from({ length: Math.floor(horizon / 1000) + 1 }, (_, i) => t0.getTime() + i * 1000);
    expect(first.map((e) => e.scheduledFor.getTime())).toEqual(window);
    expect(second).toEqual([]);
    expect(await db.prisma.taskExecution.count({ where: { taskId: task.id } })).toBe(window.length);
    expect((await db.prisma.task.findUniqueOrThrow({ where: { id: task.id } })).nextRunAt?.getTime()).toBe(
      window.at(-1)! + 1000,
    );
  });

  it('an active task whose cursor lies a week back (a long outage): one pass plans the latest CATCHUP_MAX late slots and counts the rest exactly', async () => {
    await db.prisma.task.updateMany({ data: { status: 'paused' } });
    const epoch = await db.state.bumpEpoch('week');
    const now = new Date(Math.floor(Date.now() / 1000) * 1000 + 500);
    const cursor = new Date(now.getTime() - 500 - 7 * 86_400_000);
    const task = await createTask('week-behind', cursor);
    const planned = await planner.planDueSlots(epoch, () => now);
    const rows = await db.prisma.taskExecution.findMany({
      where: { taskId: task.id },
      orderBy: { scheduledFor: 'asc' },
    });
    const after = await db.prisma.task.findUniqueOrThrow({ where: { id: task.id } });
    // run_once (the default): the latest late slot runs as a catch-up, 99 before it are missed rows.
    const late = rows.filter((r) => r.trigger === 'catchup' || r.status === 'missed');
    expect(late).toHaveLength(100);
    expect(rows.filter((r) => r.trigger === 'catchup')).toHaveLength(1);
    // Every slot from the cursor to the last one planned is a row or counted in missed_count.
    const slots = (after.lastScheduledFor!.getTime() - cursor.getTime()) / 1000 + 1;
    expect(rows.length + Number(after.missedCount) - late.filter((r) => r.status === 'missed').length).toBe(slots);
    expect(after.nextRunAt!.getTime()).toBe(after.lastScheduledFor!.getTime() + 1000);
    expect(planned.length).toBeGreaterThan(0);
  });

  it('plans a one-off up to a minute ahead, in batches, as it is created; a recurring task only within the lookahead and stride', async () => {
    await db.prisma.task.updateMany({ data: { status: 'paused' } });
    const epoch = await db.state.bumpEpoch('one-offs');
    const now = new Date();
    const instant = new Date(now.getTime() + 45_000);
    await db.prisma.task.createMany({
      data: Array.from({ length: 1_200 }, (_, i) => ({
        name: `campaign-${i}`,
        handler: 'noop',
        scheduleKind: 'at' as const,
        runAt: instant,
        nextRunAt: instant,
        secret: 's',
      })),
    });
    const later = await createTask('every-second-later', new Date(now.getTime() + 45_000));
    const planned = await planner.planDueSlots(epoch, () => now);
    expect(planned).toHaveLength(1_200);
    expect(new Set(planned.map((e) => e.fireAt.getTime()))).toEqual(new Set([instant.getTime()]));
    expect(
      await db.prisma.task.count({
        where: { name: { startsWith: 'campaign-' }, status: 'completed', nextRunAt: null },
      }),
    ).toBe(1_200);
    expect(await db.prisma.taskExecution.count({ where: { taskId: later.id } })).toBe(0);
  });

  it('refuses to plan with a superseded epoch and commits nothing', async () => {
    const old = await db.state.bumpEpoch('old');
    await db.state.bumpEpoch('new');
    const task = await createTask('fenced', new Date(Date.now() - 100));
    await expect(planner.planDueSlots(old)).rejects.toBeInstanceOf(FencedOutError);
    expect(await db.prisma.taskExecution.count({ where: { taskId: task.id } })).toBe(0);
    expect((await db.prisma.task.findUniqueOrThrow({ where: { id: task.id } })).nextRunAt).toEqual(task.nextRunAt);
  });

  it('a tick with nothing due is one look at the task index: no transaction, not even the fence', async () => {
    await db.prisma.task.updateMany({ data: { status: 'paused' } });
    const stale = await db.state.bumpEpoch('idle-stale');
    await db.state.bumpEpoch('idle-newer');
    const far = await createTask('far-off', new Date(Date.now() + 3_600_000));
    // A superseded leader's idle tick finds nothing to do and commits nothing (the heartbeat deposes it).
    expect(await planner.planDueSlots(stale)).toEqual([]);
    expect(await db.prisma.taskExecution.count({ where: { taskId: far.id } })).toBe(0);
    // Once something is due, the fence is checked first.
    await db.prisma.task.update({
      where: { id: far.id },
      data: { nextRunAt: new Date(Date.now() - 100), status: 'active' },
    });
    await expect(planner.planDueSlots(stale)).rejects.toBeInstanceOf(FencedOutError);
    await db.prisma.task.update({ where: { id: far.id }, data: { status: 'paused' } });
  });

  it('two planners racing over the same task: the unique guard keeps one row per slot', async () => {
    const epoch = await db.state.bumpEpoch('racer');
    const t0 = new Date(Math.ceil(Date.now() / 1000) * 1000);
    const task = await createTask('race', t0);
    const rows = (taskName: string) =>
      [0, 1000, 2000].map((d) => ({
        id: randomUUID(),
        taskId: task.id,
        taskName,
        scheduledFor: new Date(t0.getTime() + d),
        fireAt: new Date(t0.getTime() + d),
        trigger: 'schedule' as const,
        status: 'scheduled' as const,
        taskVersion: 1,
        exclusive: true,
      }));
    // Both insert the same slots at once (as two leaders would without the fence).
    const [a, b] = await Promise.all([
      db.executions.insertPlanned(rows('race'), db.prisma),
      db.executions.insertPlanned(rows('race'), db.prisma),
    ]);
    expect(a.length + b.length).toBe(3);
    // And two planner passes at once (same epoch, SKIP LOCKED) still plan each slot once.
    await db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: new Date(t0.getTime() + 3000) } });
    const now = () => new Date(t0.getTime() + 4500);
    await Promise.all([planner.planDueSlots(epoch, now), planner.planDueSlots(epoch, now)]);
    const slots = (await db.prisma.taskExecution.findMany({ where: { taskId: task.id } })).map((e) =>
      e.scheduledFor.getTime(),
    );
    const horizon = 4500 + phasedLookaheadMs(task.id, t0.getTime() + 4500, 2000, PLAN_STRIDE_MS);
    expect(slots.sort()).toEqual(
      Array.from({ length: Math.floor(horizon / 1000) + 1 }, (_, i) => t0.getTime() + i * 1000),
    );
  });

  it('leaves paused tasks and tasks not yet due alone', async () => {
    const epoch = await db.state.bumpEpoch('idle');
    const paused = await db.prisma.task.create({
      data: {
        name: 'paused',
        handler: 'noop',
        scheduleKind: 'cron',
        cron: '* * * * * *',
        secret: 's',
        nextRunAt: new Date(Date.now() - 1000),
        status: 'paused',
      },
    });
    const future = await createTask('future', new Date(Date.now() + 3_600_000));
    await planner.planDueSlots(epoch);
    expect(await db.prisma.taskExecution.count({ where: { taskId: { in: [paused.id, future.id] } } })).toBe(0);
  });
});
