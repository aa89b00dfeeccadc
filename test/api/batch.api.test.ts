import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('POST /v1/tasks:batch', () => {
  const ctx = useApiSandbox();
  const spec = (name: string, extra: object = {}) => ({
    name,
    handler: 'noop',
    schedule: { cron: '0 9 * * *' },
    ...extra,
  });
  const counts = async () => ({ tasks: await ctx.db.prisma.task.count(), audit: await ctx.db.prisma.auditLog.count() });

  it('creates and replaces in one call: secrets for the created only, one audit entry per task', async () => {
    expect((await ctx.api.call('POST', '/v1/tasks', spec('batch-existing'))).status).toBe(201);
    const res = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: [
        spec('batch-a'),
        spec('batch-existing', { schedule: { every: '1h' } }),
        spec('batch-b', { labels: { campaign: 'c1' } }),
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ created: 2, replaced: 1 });
    expect(
      res.body.items.map((i: { index: number; name: string; created: boolean }) => [i.index, i.name, i.created]),
    ).toEqual([
      [0, 'batch-a', true],
      [1, 'batch-existing', false],
      [2, 'batch-b', true],
    ]);
    expect(res.body.items.map((i: { secret?: string }) => typeof i.secret)).toEqual(['string', 'undefined', 'string']);
    expect((await ctx.api.call('GET', '/v1/tasks/batch-existing')).body).toMatchObject({
      version: 2,
      schedule: { every: '1h' },
    });
    expect(
      (await ctx.api.call('GET', '/v1/tasks?label=campaign=c1')).body.items.map((t: { name: string }) => t.name),
    ).toEqual(['batch-b']);
    const audit = await ctx.api.call('GET', '/v1/audit?limit=10');
    expect(
      audit.body.items
        .slice(0, 3)
        .map((a: { action: string; target: string }) => `${a.action} ${a.target}`)
        .sort(),
    ).toEqual(['task.create batch-a', 'task.create batch-b', 'task.replace batch-existing']);
  });

  it('stores a task exactly as POST /v1/tasks does', async () => {
    const rich = {
      description: 'every column',
      handler: 'http',
      payload: { url: 'https://example.com/hook', headers: { authorization: 'Bearer x' } },
      secretFields: ['headers.authorization'],
      schedule: {
        every: '15m',
        timezone: 'Europe/Berlin',
        startAt: '2030-01-01T00:00:00Z',
        endAt: '2031-01-01T00:00:00Z',
        jitter: '2s',
      },
      policy: {
        overlap: 'allow',
        misfire: 'run_all',
        maxDelay: '10m',
        retry: { attempts: 5, backoff: '1s', maxBackoff: '1m' },
        timeout: '30s',
      },
      notify: { url: 'https://example.com/events', on: ['failed', 'dead'] },
      paused: true,
      labels: { team: 'billing' },
      managedBy: 'punctual-apply',
    };
    expect((await ctx.api.call('POST', '/v1/tasks', { name: 'same-post', ...rich })).status).toBe(201);
    expect((await ctx.api.call('POST', '/v1/tasks:batch', { tasks: [{ name: 'same-batch', ...rich }] })).status).toBe(
      200,
    );
    const strip = ({ name: _n, createdAt: _c, updatedAt: _u, ...rest }: Record<string, unknown>) => rest;
    const viaPost = (await ctx.api.call('GET', '/v1/tasks/same-post')).body;
    expect(strip((await ctx.api.call('GET', '/v1/tasks/same-batch')).body)).toEqual(strip(viaPost));
    const rows = await ctx.db.prisma.task.findMany({
      where: { name: { in: ['same-post', 'same-batch'] } },
      orderBy: { name: 'asc' },
    });
    const columns = ({ id: _i, name: _n, secret: _s, createdAt: _c, updatedAt: _u, ...rest }: (typeof rows)[number]) =>
      rest;
    expect(columns(rows[0]!)).toEqual(columns(rows[1]!));
  });

  it('is all or nothing: one invalid item refuses the batch, naming the item by its index', async () => {
    const before = await counts();
    const meaning = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: [
        spec('none-1'),
        spec('none-2'),
        spec('none-3', { schedule: { cron: '61 * * * *' } }),
        spec('none-4', { schedule: { at: '2000-01-01T00:00:00Z' } }),
      ],
    });
    expect(meaning.status).toBe(422);
    expect(meaning.body.error.details.map((d: { field: string }) => d.field)).toEqual([
      'tasks[2].schedule.cron',
      'tasks[3].schedule.at',
    ]);
    const shape = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: [spec('none-1'), { name: 'none-2', schedule: { cron: '* * * * *' } }],
    });
    expect(shape.status).toBe(400);
    expect(shape.body.error.details[0].field).toBe('tasks[1].handler');
    const twice = await ctx.api.call('POST', '/v1/tasks:batch', { tasks: [spec('none-1'), spec('none-1')] });
    expect(twice.status).toBe(422);
    expect(twice.body.error.details[0].field).toBe('tasks[1].name');
    const tooMany = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: Array.from({ length: 1001 }, (_, i) => spec(`too-many-${i}`)),
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.details[0].field).toBe('tasks');
    expect((await ctx.api.call('POST', '/v1/tasks:batch', { tasks: [] })).status).toBe(422);
    expect(await counts()).toEqual(before);
  });

  it('creates a thousand one-off tasks in one call', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const tasks = Array.from({ length: 1000 }, (_, i) => ({
      name: `campaign-${i}`,
      handler: 'noop',
      schedule: { at },
    }));
    const res = await ctx.api.call('POST', '/v1/tasks:batch', { tasks });
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(1000);
    expect(
      await ctx.db.prisma.task.count({ where: { name: { startsWith: 'campaign-' }, nextRunAt: new Date(at) } }),
    ).toBe(1000);
    expect(
      await ctx.db.prisma.auditLog.count({ where: { action: 'task.create', target: { startsWith: 'campaign-' } } }),
    ).toBe(1000);
  });

  it('warns, and still writes, when no live worker offers a handler', async () => {
    const res = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: [spec('warned', { handler: 'nobody-offers-this' })],
    });
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(['no live worker offers handler "nobody-offers-this"']);
    const single = await ctx.api.call('POST', '/v1/tasks', spec('warned-single', { handler: 'nobody-offers-this' }));
    expect(single.status).toBe(201);
    expect(single.body.warnings).toEqual(['no live worker offers handler "nobody-offers-this"']);
  });
});
