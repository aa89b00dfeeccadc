import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('POST /v1/tasks:apply', () => {
  const ctx = useApiSandbox();
  const spec = (name: string, extra: object = {}) => ({
    name,
    handler: 'noop',
    schedule: { cron: '0 9 * * *' },
    ...extra,
  });
  const apply = (body: object) => ctx.api.call('POST', '/v1/tasks:apply', body);
  const audit = async () =>
    (await ctx.api.call('GET', '/v1/audit?limit=100')).body.items as { action: string; target: string }[];
  const state = async () => ({
    tasks: await ctx.db.prisma.task.findMany({ orderBy: { name: 'asc' } }),
    audit: await ctx.db.prisma.auditLog.count(),
  });

  it('creates, then changes only what differs, one audit entry per task, and a second apply changes nothing', async () => {
    const first = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-one'), spec('ap-two', { labels: { team: 'x' } })],
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      managedBy: 'repo-a',
      dryRun: false,
      changed: 2,
      created: 2,
      updated: 0,
      deleted: 0,
      unchanged: 0,
    });
    expect(first.body.items).toEqual([
      {
        name: 'ap-one',
        action: 'create',
        changes: [],
        version: 1,
        secret: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
      },
      {
        name: 'ap-two',
        action: 'create',
        changes: [],
        version: 1,
        secret: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
      },
    ]);
    const stored = await ctx.db.prisma.task.findUnique({ where: { name: 'ap-one' } });
    expect(first.body.items[0].secret).toBe(stored?.secret);
    expect((await ctx.api.call('GET', '/v1/tasks/ap-one')).body.managedBy).toBe('repo-a');

    const auditBefore = (await audit()).length;
    const second = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-one', { schedule: { cron: '30 9 * * *' } }), spec('ap-two', { labels: { team: 'x' } })],
    });
    expect(second.body).toMatchObject({ changed: 1, updated: 1, unchanged: 1 });
    expect(second.body.items[0]).toEqual({
      name: 'ap-one',
      action: 'update',
      changes: [{ field: 'schedule.cron', before: '0 9 * * *', after: '30 9 * * *', secret: false }],
      version: 2,
    });
    const entries = await audit();
    expect(entries.length - auditBefore).toBe(1);
    expect(entries[0]).toMatchObject({ action: 'task.update', target: 'ap-one' });

    const versions = (await state()).tasks.map((t) => t.version);
    const again = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-one', { schedule: { cron: '30 9 * * *' } }), spec('ap-two', { labels: { team: 'x' } })],
    });
    expect(again.body).toMatchObject({ changed: 0, unchanged: 2 });
    expect((await state()).tasks.map((t) => t.version)).toEqual(versions);
    expect((await audit()).length).toBe(entries.length);
  });

  it('answers the diff with dryRun and writes nothing', async () => {
    const before = await state();
    const res = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-one', { handler: 'http' }), spec('ap-new')],
      prune: true,
      dryRun: true,
    });
    expect(res.body).toMatchObject({ dryRun: true, changed: 3, created: 1, updated: 1, deleted: 1 });
    expect(res.body.items.map((i: { action: string; name: string }) => `${i.action} ${i.name}`)).toEqual([
      'update ap-one',
      'create ap-new',
      'delete ap-two',
    ]);
    expect(res.body.items.every((i: { secret?: string }) => i.secret === undefined)).toBe(true);
    expect(await state()).toEqual(before);
  });

  it('prunes only what its manager manages; tasks managed by nobody or someone else are untouched, and declaring one is refused', async () => {
    expect((await ctx.api.call('POST', '/v1/tasks', spec('ap-by-hand'))).status).toBe(201);
    expect((await apply({ managedBy: 'repo-b', tasks: [spec('ap-theirs')] })).status).toBe(200);
    const pruned = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-one', { schedule: { cron: '30 9 * * *' } })],
      prune: true,
    });
    expect(pruned.body).toMatchObject({ changed: 1, deleted: 1, unchanged: 1 });
    expect(pruned.body.items.at(-1)).toEqual({ name: 'ap-two', action: 'delete', changes: [], version: null });
    expect((await audit())[0]).toMatchObject({ action: 'task.delete', target: 'ap-two' });
    expect((await ctx.api.call('GET', '/v1/tasks/ap-by-hand')).body).toMatchObject({ managedBy: null, version: 1 });
    expect((await ctx.api.call('GET', '/v1/tasks/ap-theirs')).body).toMatchObject({ managedBy: 'repo-b', version: 1 });

    const before = await state();
    const taken = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-fresh'), spec('ap-by-hand'), spec('ap-theirs')],
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('not_managed');
    expect(taken.body.error.details).toEqual([
      { field: 'tasks[1].name', message: 'task "ap-by-hand" exists and is managed by nobody, not by "repo-a"' },
      { field: 'tasks[2].name', message: 'task "ap-theirs" exists and is managed by "repo-b", not by "repo-a"' },
    ]);
    expect(await state()).toEqual(before);
  });

  it('is all or nothing: an invalid task, a duplicate name or another manager refuses the whole apply', async () => {
    const before = await state();
    const invalid = await apply({
      managedBy: 'repo-a',
      tasks: [spec('ap-ok'), spec('ap-bad', { schedule: { cron: '61 * * * *' } })],
      prune: true,
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.details.map((d: { field: string }) => d.field)).toEqual(['tasks[1].schedule.cron']);
    const twice = await apply({ tasks: [spec('ap-ok'), spec('ap-ok')] });
    expect(twice.status).toBe(422);
    expect(twice.body.error.details[0].field).toBe('tasks[1].name');
    const other = await apply({ managedBy: 'repo-a', tasks: [spec('ap-ok', { managedBy: 'repo-b' })] });
    expect(other.status).toBe(422);
    expect(other.body.error.details[0].field).toBe('tasks[0].managedBy');
    const unknown = await apply({ managedBy: 'repo-a', tasks: [spec('ap-ok', { colour: 'red' })] });
    expect(unknown.status).toBe(400);
    expect(await state()).toEqual(before);
  });

  it('never answers a secret payload value, and leaves the pause state to the operator unless the file says it', async () => {
    const secretSpec = (token: string) =>
      spec('ap-secret', { payload: { token, keep: 'visible' }, secretFields: ['token'] });
    expect((await apply({ managedBy: 'repo-s', tasks: [secretSpec('first-token-value')] })).body.created).toBe(1);
    const changed = await apply({ managedBy: 'repo-s', tasks: [secretSpec('second-token-value')], dryRun: true });
    expect(changed.body.items[0].changes).toEqual([
      { field: 'payload.token', before: null, after: null, secret: true },
    ]);
    expect(JSON.stringify(changed.body)).not.toMatch(/token-value/);
    expect((await apply({ managedBy: 'repo-s', tasks: [secretSpec('first-token-value')] })).body.changed).toBe(0);

    expect((await ctx.api.call('POST', '/v1/tasks/ap-secret/pause', {})).status).toBe(200);
    expect((await apply({ managedBy: 'repo-s', tasks: [secretSpec('first-token-value')] })).body.changed).toBe(0);
    expect((await ctx.api.call('GET', '/v1/tasks/ap-secret')).body.status).toBe('paused');
    const resumed = await apply({
      managedBy: 'repo-s',
      tasks: [{ ...secretSpec('first-token-value'), paused: false }],
    });
    expect(resumed.body.items[0].changes).toEqual([{ field: 'paused', before: true, after: false, secret: false }]);
    expect((await ctx.api.call('GET', '/v1/tasks/ap-secret')).body.status).toBe('active');
  });

  it('manages by "punctual-apply" when the request names nobody', async () => {
    const res = await apply({ tasks: [spec('ap-default')] });
    expect(res.body.managedBy).toBe('punctual-apply');
    expect((await ctx.api.call('GET', '/v1/tasks/ap-default')).body.managedBy).toBe('punctual-apply');
  });
});
