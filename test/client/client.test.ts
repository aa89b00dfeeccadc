import { PunctualApiError, PunctualClient } from '@punctual/client';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('PunctualClient against the running API', () => {
  const ctx = useApiSandbox();
  const client = () => new PunctualClient({ baseUrl: `${ctx.api.base}/`, apiKey: ctx.api.config.adminApiKey });

  it('creates, reads, changes, pauses, resumes and deletes a task', async () => {
    const c = client();
    const created = await c.tasks.create({
      name: 'client-task',
      handler: 'noop',
      schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
      labels: { team: 'billing' },
    });
    expect(created.secret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(created.warnings).toEqual(['no live worker offers handler "noop"']);
    const detail = await c.tasks.get('client-task');
    expect(detail.upcoming).toHaveLength(5);
    const patched = await c.tasks.patch('client-task', { description: 'from the client' }, { ifMatch: detail.version });
    expect(patched).toMatchObject({ description: 'from the client', version: 2 });
    const conflict = await c.tasks
      .patch('client-task', { description: 'stale' }, { ifMatch: 1 })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(PunctualApiError);
    expect(conflict).toMatchObject({ status: 409, code: 'version_conflict' });
    expect((await c.tasks.put('client-put', { handler: 'noop', schedule: { every: '15m' } })).secret).toBeDefined();
    expect((await c.tasks.put('client-put', { handler: 'noop', schedule: { every: '30m' } })).secret).toBeUndefined();
    expect((await c.tasks.pause('client-task')).status).toBe('paused');
    expect((await c.tasks.resume('client-task', { catchUp: 'skip' })).status).toBe('active');
    const run = await c.tasks.trigger('client-task', { payload: { why: 'test' } });
    expect(run).toMatchObject({ task: 'client-task', trigger: 'manual' });
    expect((await c.executions.get(run.id)).events).toEqual([]);
    expect((await c.executions.cancel(run.id)).status).toBe('cancelled');
    expect(await c.tasks.executions('client-task').all()).toHaveLength(1);
    // Two days of a daily 09:00 (Berlin) task, within the history kept: midnight UTC 4 and 2 days ago.
    const midnight = (daysAgo: number) =>
      new Date(Math.floor(Date.now() / 86_400_000 - daysAgo) * 86_400_000).toISOString();
    expect(await c.tasks.backfill('client-task', { from: midnight(4), to: midnight(2) })).toEqual({ planned: 2 });
    // A slot planned ahead is listed only when asked for: the client passes `planned` on.
    const row = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'client-task' } });
    const ahead = new Date(Date.now() + 3_600_000);
    await ctx.db.prisma.taskExecution.create({
      data: {
        id: executionIdFor(ahead),
        taskId: row.id,
        taskName: row.name,
        scheduledFor: ahead,
        fireAt: ahead,
        taskVersion: row.version,
      },
    });
    expect(await c.tasks.executions('client-task').all()).toHaveLength(3);
    expect(await c.tasks.executions('client-task', { planned: true }).all()).toHaveLength(4);
    expect(await c.executions.list({ task: 'client-task', planned: true }).all()).toHaveLength(4);
    await c.tasks.delete('client-task');
    const missing = await c.tasks.get('client-task').catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    // Its history is still read by its name; the slot planned ahead was never due: the delete withdrew it.
    expect((await c.tasks.executions('client-task', { planned: true }).all()).map((e) => e.taskDeleted)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('walks every page with for await, and filters by label', async () => {
    const c = client();
    const batch = await c.tasks.batch(
      Array.from({ length: 7 }, (_, i) => ({
        name: `page-${i}`,
        handler: 'noop',
        schedule: { cron: '0 9 * * *' },
        labels: { set: 'paged' },
      })),
    );
    expect(batch.created).toBe(7);
    const names: string[] = [];
    for await (const task of c.tasks.list({ label: ['set=paged'], limit: 3 })) names.push(task.name);
    expect(names).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4', 'page-5', 'page-6']);
    const pages: number[] = [];
    for await (const page of c.tasks.list({ label: ['set=paged'], limit: 3 }).pages()) pages.push(page.items.length);
    expect(pages).toEqual([3, 3, 1]);
  });

  it('throws PunctualApiError with the code and the field details of a refusal', async () => {
    const error = await client()
      .tasks.create({ name: 'bad', handler: 'noop', schedule: { cron: '61 * * * *' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PunctualApiError);
    expect(error).toMatchObject({ status: 422, code: 'invalid_schedule', details: [{ field: 'schedule.cron' }] });
    const anonymous = await new PunctualClient({ baseUrl: ctx.api.base }).tasks
      .list()
      .page()
      .catch((e: unknown) => e);
    expect(anonymous).toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  it('reads an answer that is not the envelope, or names a code the contract does not know, as code unknown', async () => {
    const answering = (res: () => Response) => new PunctualClient({ baseUrl: ctx.api.base, fetch: async () => res() });
    const proxy = await answering(
      () => new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway' }),
    )
      .me()
      .catch((e: unknown) => e);
    expect(proxy).toMatchObject({ status: 502, code: 'unknown', message: '<html>Bad Gateway</html>', details: [] });
    const newer = answering(() =>
      Response.json(
        { error: { code: 'from_a_newer_api', message: 'not yet', details: [{ field: 'x', message: 'not yet' }] } },
        { status: 422 },
      ),
    );
    expect(await newer.me().catch((e: unknown) => e)).toMatchObject({
      status: 422,
      code: 'unknown',
      message: 'not yet',
      details: [{ field: 'x' }],
    });
  });

  it('previews schedules, lists handlers, API keys and the cluster, through a fetch of its own', async () => {
    const calls: string[] = [];
    const c = new PunctualClient({
      baseUrl: ctx.api.base,
      apiKey: ctx.api.config.adminApiKey,
      fetch: (input, init) => (calls.push(`${init?.method} ${String(input)}`), fetch(input, init)),
    });
    const preview = await c.schedules.preview({
      schedule: { cron: '0 9 * * *', timezone: 'America/New_York' },
      from: '2026-03-07T00:00:00Z',
      count: 2,
    });
    expect(preview.fireTimes.map((f) => f.at)).toEqual(['2026-03-07T14:00:00.000Z', '2026-03-08T13:00:00.000Z']);
    expect(await c.handlers.list()).toEqual([]);
    const key = await c.apiKeys.create({ name: 'client-key', role: 'viewer' });
    expect((await c.apiKeys.list()).map((k) => k.name)).toContain('client-key');
    await c.apiKeys.revoke(key.id);
    expect((await c.cluster.get()).clockOffsets.map((o) => o.role)).toEqual(['api']);
    expect((await c.audit.list({ action: 'api_key.create' }).page()).items[0]?.target).toBe(key.prefix);
    expect(calls[0]).toBe(`POST ${ctx.api.base}/v1/schedules/preview`);
  });
});
