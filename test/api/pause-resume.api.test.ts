import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('pause and resume', () => {
  const ctx = useApiSandbox();

  /** A task every minute whose cursor sits `minutesAgo` in the past, with one planned row. */
  async function pausedTask(name: string, minutesAgo: number) {
    // The counts below hold within one minute: never start a task within 3 s of the next one.
    const toNextMinute = 60_000 - (Date.now() % 60_000);
    if (toNextMinute < 3_000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 100));
    expect((await ctx.api.call('POST', '/v1/tasks', { name, handler: 'noop', schedule: { cron: '* * * * *' } })).status).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
    const planned = crypto.randomUUID();
    await ctx.db.prisma.taskExecution.create({
      data: { id: planned, taskId: task.id, taskName: name, scheduledFor: task.nextRunAt!, fireAt: task.nextRunAt!, taskVersion: task.version },
    });
    const paused = await ctx.api.call('POST', `/v1/tasks/${name}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', paused: true });
    // A slot planned ahead that has not come is withdrawn: the resume decides it with the others.
    expect(await ctx.db.prisma.taskExecution.findUnique({ where: { id: planned } })).toBeNull();
    expect(Date.parse(paused.body.nextRunAt)).toBe(task.nextRunAt!.getTime());
    const minute = 60_000;
    const cursor = new Date(Math.floor(Date.now() / minute) * minute - minutesAgo * minute);
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: cursor } });
    return { task, cursor };
  }

  const rowsOf = (taskId: string) =>
    ctx.db.prisma.taskExecution.findMany({ where: { taskId, status: { not: 'skipped' } }, orderBy: { scheduledFor: 'asc' } });

  it('catchUp=latest runs the most recent slot of the pause now and records the rest as missed', async () => {
    const { task } = await pausedTask('resume-latest', 5);
    const res = await ctx.api.call('POST', '/v1/tasks/resume-latest/resume', { catchUp: 'latest' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('active');
    expect(Date.parse(res.body.nextRunAt)).toBeGreaterThan(Date.now());
    const rows = await rowsOf(task.id);
    expect(rows.map((r) => `${r.status}/${r.trigger}`)).toEqual([...Array(5).fill('missed/schedule'), 'scheduled/catchup']);
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

  it('refuses an unknown catchUp, and answers 404 for an unknown task', async () => {
    expect((await ctx.api.call('POST', '/v1/tasks/resume-all/resume', { catchUp: 'some' })).status).toBe(422);
    expect((await ctx.api.call('POST', '/v1/tasks/nope/pause')).status).toBe(404);
    expect((await ctx.api.call('POST', '/v1/tasks/nope/resume', {})).status).toBe(404);
  });
});
