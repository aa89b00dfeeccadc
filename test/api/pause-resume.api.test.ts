import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('pause and resume', () => {
  const ctx = useApiSandbox();

  /** A task every minute whose cursor sits `minutesAgo` in the past, with one planned row. */
  async function pausedTask(name: string, minutesAgo: number) {
    // The counts below hold within one minute: never start a task within 3 s of the next one.
    const toNextMinute = 60_000 - (Date.now() % 60_000);
    if (toNextMinute < 3_000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 100));
    expect(
      (await ctx.api.call('POST', '/v1/tasks', { name, handler: 'noop', schedule: { cron: '* * * * *' } })).status,
    ).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
    const planned = crypto.randomUUID();
    await ctx.db.prisma.taskExecution.create({
      data: {
        id: planned,
        taskId: task.id,
        taskName: name,
        scheduledFor: task.nextRunAt!,
        fireAt: task.nextRunAt!,
        taskVersion: task.version,
      },
    });
    const paused = await ctx.api.call('POST', `/v1/tasks/${name}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', paused: true });
    // A slot planned ahead that has not come is withdrawn: the resume decides it with the others.
    expect(await ctx.db.prisma.taskExecution.findFirst({ where: { id: planned } })).toBeNull();
    // Paused, it has no next run; the planner's cursor stays where the pause found it.
    expect(paused.body.nextRunAt).toBeNull();
    expect(Date.parse(paused.body.planCursor)).toBe(task.nextRunAt!.getTime());
    const minute = 60_000;
    const cursor = new Date(Math.floor(Date.now() / minute) * minute - minutesAgo * minute);
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: cursor } });
    return { task, cursor };
  }

  const rowsOf = (taskId: string) =>
    ctx.db.prisma.taskExecution.findMany({
      where: { taskId, status: { not: 'skipped' } },
      orderBy: { scheduledFor: 'asc' },
    });

  it('catchUp=latest runs the most recent slot of the pause now and records the rest as missed', async () => {
    const { task } = await pausedTask('resume-latest', 5);
    const res = await ctx.api.call('POST', '/v1/tasks/resume-latest/resume', { catchUp: 'latest' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    expect(Date.parse(res.body.nextRunAt)).toBeGreaterThan(Date.now());
    const rows = await rowsOf(task.id);
    expect(rows.map((r) => `${r.status}/${r.trigger}`)).toEqual([
      ...Array(5).fill('missed/schedule'),
      'scheduled/catchup',
    ]);
  });

  it('catchUp=skip records every slot of the pause as missed', async () => {
    const { task } = await pausedTask('resume-skip', 4);
    await ctx.api.call('POST', '/v1/tasks/resume-skip/resume', { catchUp: 'skip' });
    const rows = await rowsOf(task.id);
    expect(rows.map((r) => r.status)).toEqual(Array(5).fill('missed'));
    expect(Number((await ctx.db.prisma.task.findUniqueOrThrow({ where: { id: task.id } })).missedCount)).toBe(5);
  });

  it('catchUp=all runs every slot of the pause, at most CATCHUP_MAX', async () => {
    const { task } = await pausedTask('resume-all', 2);
    await ctx.api.call('POST', '/v1/tasks/resume-all/resume', { catchUp: 'all' });
    const rows = await rowsOf(task.id);
    expect(rows.map((r) => `${r.status}/${r.trigger}`)).toEqual(Array(3).fill('scheduled/catchup'));
  });

  describe('an every-second task paused for a week (604,800 slots): long pauses cost what short ones do', () => {
    const WEEK = 7 * 86_400_000;
    const CATCHUP_MAX = 100;

    /** Paused, its cursor a week back on a whole second. */
    async function pausedForAWeek(name: string) {
      expect(
        (await ctx.api.call('POST', '/v1/tasks', { name, handler: 'noop', schedule: { cron: '* * * * * *' } })).status,
      ).toBe(201);
      expect((await ctx.api.call('POST', `/v1/tasks/${name}/pause`)).status).toBe(200);
      const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
      // Nothing of the task was planned before the pause's week.
      await ctx.db.prisma.taskExecution.deleteMany({ where: { taskId: task.id } });
      const cursor = new Date(Math.floor(Date.now() / 1000) * 1000 - WEEK);
      await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: cursor, missedCount: 0 } });
      return { task, cursor };
    }

    /** Every slot from the cursor to the resume is a row or counted in missed_count, exactly once. */
    async function accountFor(taskId: string, cursor: Date) {
      const after = await ctx.db.prisma.task.findUniqueOrThrow({ where: { id: taskId } });
      const rows = await ctx.db.prisma.taskExecution.findMany({ where: { taskId }, orderBy: { scheduledFor: 'asc' } });
      const resumedAt = after.updatedAt.getTime();
      const slots = Math.floor((resumedAt - cursor.getTime()) / 1000) + 1;
      const pauseRows = rows.filter((r) => r.scheduledFor.getTime() <= resumedAt);
      const countedOnly = Number(after.missedCount) - pauseRows.filter((r) => r.status === 'missed').length;
      expect(new Set(rows.map((r) => r.scheduledFor.getTime())).size).toBe(rows.length);
      // Rows stop at the resume: the next slot is the cursor's.
      expect(after.nextRunAt!.getTime()).toBeGreaterThan(resumedAt);
      expect(pauseRows.length + countedOnly).toBe(slots);
      return { rows: pauseRows, after };
    }

    it.each([
      ['latest', 1, CATCHUP_MAX - 1],
      ['all', CATCHUP_MAX, 0],
      ['skip', 0, CATCHUP_MAX],
    ] as const)(
      'catchUp=%s: %i catch-up run(s), %i missed rows, every other slot counted in missed_count',
      async (catchUp, catchups, missedRows) => {
        const { task, cursor } = await pausedForAWeek(`week-${catchUp}`);
        const res = await ctx.api.call('POST', `/v1/tasks/week-${catchUp}/resume`, { catchUp });
        expect(res.status).toBe(200);
        const { rows, after } = await accountFor(task.id, cursor);
        expect(rows.filter((r) => r.trigger === 'catchup')).toHaveLength(catchups);
        expect(rows.filter((r) => r.status === 'missed')).toHaveLength(missedRows);
        // The rows written are the most recent slots of the pause.
        expect(rows.at(-1)!.scheduledFor.getTime()).toBeGreaterThan(after.updatedAt.getTime() - 1_000);
        expect(Number(after.missedCount)).toBeGreaterThan(600_000);
      },
    );
  });

  it('refuses an unknown catchUp, and answers 404 for an unknown task', async () => {
    expect((await ctx.api.call('POST', '/v1/tasks/resume-all/resume', { catchUp: 'some' })).status).toBe(422);
    expect((await ctx.api.call('POST', '/v1/tasks/nope/pause')).status).toBe(404);
    expect((await ctx.api.call('POST', '/v1/tasks/nope/resume', {})).status).toBe(404);
  });
});
