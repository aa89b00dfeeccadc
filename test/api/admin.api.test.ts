import { ClockService } from '@punctual/clock';
import { describe, expect, it, vi } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { executionIdFor } from '../../libs/contract/src/index.js';

describe('operator and admin routes', () => {
  const ctx = useApiSandbox();

  it('PATCH merges a partial change and honours If-Match', async () => {
    await ctx.api.call('POST', '/v1/tasks', {
      name: 'patchy',
      handler: 'noop',
      payload: { keep: 1 },
      schedule: { cron: '0 9 * * *' },
      policy: { retry: { attempts: 5 } },
    });
    const patched = await ctx.api.call(
      'PATCH',
      '/v1/tasks/patchy',
      { policy: { timeout: '10s' }, description: 'now described' },
      { 'if-match': '1' },
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      version: 2,
      description: 'now described',
      payload: { keep: 1 },
      schedule: { cron: '0 9 * * *' },
      policy: { timeout: '10s', retry: { attempts: 5 } },
    });
    const stale = await ctx.api.call('PATCH', '/v1/tasks/patchy', { description: 'lost update' }, { 'if-match': '1' });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('version_conflict');
    const kind = await ctx.api.call('PATCH', '/v1/tasks/patchy', { schedule: { every: '10m' } });
    expect(kind.body.schedule).toMatchObject({ every: '10m' });
    expect(kind.body.schedule.cron).toBeUndefined();
    expect((await ctx.api.call('PATCH', '/v1/tasks/nope', {})).status).toBe(404);
  });

  it('trigger inserts a manual run now, with the payload override, even while paused', async () => {
    await ctx.api.call('POST', '/v1/tasks', {
      name: 'manual',
      handler: 'log',
      payload: { a: 1 },
      schedule: { cron: '0 0 1 1 *' },
      paused: true,
    });
    const before = Date.now();
    const res = await ctx.api.call('POST', '/v1/tasks/manual/trigger', { payload: { b: 2 } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ task: 'manual', trigger: 'manual', status: 'scheduled' });
    expect(Date.parse(res.body.fireAt)).toBeGreaterThanOrEqual(before - 5);
    expect((await ctx.db.prisma.taskExecution.findFirstOrThrow({ where: { id: res.body.id } })).payload).toEqual({
      b: 2,
    });
    const twice = await Promise.all([
      ctx.api.call('POST', '/v1/tasks/manual/trigger', {}),
      ctx.api.call('POST', '/v1/tasks/manual/trigger', {}),
    ]);
    expect(new Set(twice.map((r) => r.body.id)).size).toBe(2);
  });

  it("a trigger on an instant of the task's schedule takes the next millisecond: the slot keeps its own run", async () => {
    await ctx.api.call('POST', '/v1/tasks', {
      name: 'every-second',
      handler: 'noop',
      schedule: { cron: '* * * * * *' },
    });
    // Asked exactly on a whole second — a slot of the schedule, planned or not yet.
    const slot = Math.ceil(Date.now() / 1000) * 1000 + 60_000;
    const clock = vi.spyOn(ctx.api.app.get(ClockService), 'now').mockReturnValue(slot);
    try {
      const res = await ctx.api.call('POST', '/v1/tasks/every-second/trigger', {});
      expect(res.status).toBe(202);
      expect(Date.parse(res.body.scheduledFor)).toBe(slot + 1);
    } finally {
      clock.mockRestore();
    }
  });

  it('backfill plans the slots of a past window once, capped by maxRuns', async () => {
    await ctx.api.call('POST', '/v1/tasks', { name: 'hourly', handler: 'noop', schedule: { cron: '0 * * * *' } });
    // Windows within the history kept (30 days): whole hours of three and two days ago.
    const hour = (hoursAgo: number) =>
      new Date((Math.floor(Date.now() / 3_600_000) - hoursAgo) * 3_600_000).toISOString();
    const window = { from: hour(72), to: hour(67) };
    const first = await ctx.api.call('POST', '/v1/tasks/hourly/backfill', window);
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ planned: 6 });
    expect((await ctx.api.call('POST', '/v1/tasks/hourly/backfill', window)).body).toEqual({ planned: 0 });
    expect(
      (
        await ctx.api.call('POST', '/v1/tasks/hourly/backfill', {
          from: hour(48),
          to: hour(24),
          maxRuns: 3,
        })
      ).body,
    ).toEqual({ planned: 3 });
    const rows = await ctx.db.prisma.taskExecution.findMany({ where: { taskName: 'hourly' } });
    expect(rows.every((r) => r.trigger === 'backfill' && r.status === 'scheduled')).toBe(true);
  });

  it('backfill runs the slots of its window that did not run, missed or skipped ones too; not one that ran', async () => {
    await ctx.api.call('POST', '/v1/tasks', { name: 'decided', handler: 'noop', schedule: { cron: '0 * * * *' } });
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'decided' } });
    const hour = (hoursAgo: number) => new Date((Math.floor(Date.now() / 3_600_000) - hoursAgo) * 3_600_000);
    // Three slots decided without running (missed late, skipped for an overlap) and one that ran.
    const decided = [
      { at: hour(30), status: 'missed' as const },
      { at: hour(29), status: 'skipped' as const },
      { at: hour(28), status: 'succeeded' as const },
      { at: hour(27), status: 'missed' as const },
    ];
    await ctx.db.historyAt(...decided.map((d) => d.at));
    for (const { at, status } of decided)
      await ctx.db.prisma.taskExecution.create({
        data: {
          id: executionIdFor(at),
          taskId: task.id,
          taskName: 'decided',
          scheduledFor: at,
          fireAt: at,
          status,
          taskVersion: task.planVersion,
          finishedAt: at,
          ...(status === 'skipped' && { skipReason: 'overlap' as const }),
          ...(status === 'succeeded' && { startedAt: at, attempt: 1 }),
        },
      });
    const res = await ctx.api.call('POST', '/v1/tasks/decided/backfill', {
      from: hour(31).toISOString(),
      to: hour(26).toISOString(),
    });
    expect(res.status).toBe(202);
    // Two slots with no row, the three decided: the one that ran is left as it was.
    expect(res.body).toEqual({ planned: 5 });
    const rows = await ctx.db.prisma.taskExecution.findMany({
      where: { taskName: 'decided' },
      orderBy: { scheduledFor: 'asc' },
    });
    expect(rows.map((r) => `${r.trigger} ${r.status}`)).toEqual([
      'backfill scheduled',
      'backfill scheduled',
      'backfill scheduled',
      'schedule succeeded',
      'backfill scheduled',
      'backfill scheduled',
    ]);
    expect(rows.every((r) => r.status !== 'scheduled' || (r.finishedAt === null && r.skipReason === null))).toBe(true);
    // Each slot still has its one row, and a second backfill finds nothing left to run.
    expect(new Set(rows.map((r) => r.scheduledFor.getTime())).size).toBe(6);
    expect(
      (
        await ctx.api.call('POST', '/v1/tasks/decided/backfill', {
          from: hour(31).toISOString(),
          to: hour(26).toISOString(),
        })
      ).body,
    ).toEqual({ planned: 0 });
  });

  it('previews fire times in UTC and local time', async () => {
    const res = await ctx.api.call('POST', '/v1/schedules/preview', {
      schedule: { cron: '0 9 * * *', timezone: 'America/New_York' },
      from: '2026-03-07T00:00:00Z',
      count: 3,
    });
    expect(res.status).toBe(200);
    expect(res.body.fireTimes).toEqual([
      { at: '2026-03-07T14:00:00.000Z', local: '2026-03-07T09:00:00.000-05:00' },
      { at: '2026-03-08T13:00:00.000Z', local: '2026-03-08T09:00:00.000-04:00' },
      { at: '2026-03-09T13:00:00.000Z', local: '2026-03-09T09:00:00.000-04:00' },
    ]);
    expect(
      (await ctx.api.call('POST', '/v1/schedules/preview', { schedule: { cron: 'nope' } })).body.error.details[0].field,
    ).toBe('schedule.cron');
  });

  it('records every admin change in the audit log, with before and after', async () => {
    await ctx.api.call('POST', '/v1/tasks', { name: 'audited', handler: 'noop', schedule: { cron: '0 9 * * *' } });
    await ctx.api.call('PATCH', '/v1/tasks/audited', { description: 'd' });
    await ctx.api.call('POST', '/v1/tasks/audited/pause');
    await ctx.api.call('DELETE', '/v1/tasks/audited');
    const key = await ctx.api.call('POST', '/v1/api-keys', { name: 'audited-key', role: 'viewer' });
    const log = await ctx.api.call('GET', '/v1/audit?target=audited');
    expect(log.body.items.map((a: { action: string }) => a.action)).toEqual([
      'task.delete',
      'task.pause',
      'task.update',
      'task.create',
    ]);
    const update = log.body.items[2];
    expect(update).toMatchObject({
      actor: 'admin-api-key',
      before: { description: null },
      after: { description: 'd' },
    });
    const keyLog = await ctx.api.call('GET', `/v1/audit?action=api_key.create`);
    expect(keyLog.body.items[0].target).toBe(key.body.prefix);
    expect(JSON.stringify(keyLog.body)).not.toContain(key.body.key);
  });

  it('lists the handlers the live workers offer', async () => {
    await ctx.db.prisma.$disconnect();
    const { Redis } = await import('ioredis');
    const redis = new Redis(ctx.sandbox.config().redisUrl);
    await redis.set(`${ctx.sandbox.redisPrefix}:workers:w1`, JSON.stringify({ handlers: ['http', 'noop'] }), 'EX', 30);
    await redis.set(`${ctx.sandbox.redisPrefix}:workers:w2`, JSON.stringify({ handlers: ['noop'] }), 'EX', 30);
    redis.disconnect();
    const res = await ctx.api.call('GET', '/v1/handlers');
    expect(res.body.items).toEqual([
      { name: 'http', workers: 1 },
      { name: 'noop', workers: 2 },
    ]);
  });
});
