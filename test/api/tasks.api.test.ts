import { describe, expect, it } from 'vitest';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('tasks API', () => {
  const ctx = useApiSandbox();

  const nightly = {
    name: 'nightly-report',
    handler: 'log',
    payload: { hello: 'world' },
    schedule: { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' },
  };

  it('creates a task with the documented defaults, shows its secret once, and refuses a second of the same name', async () => {
    const created = await ctx.api.call('POST', '/v1/tasks', nightly);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'nightly-report',
      handler: 'log',
      payload: { hello: 'world' },
      schedule: { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', startAt: null, endAt: null, jitter: '0ms' },
      policy: {
        overlap: 'skip',
        misfire: 'run_once',
        maxDelay: '1h',
        retry: { attempts: 3, backoff: '30s', maxBackoff: '1h' },
        timeout: '5m',
      },
      notify: { url: null, on: ['dead'] },
      paused: false,
      status: 'active',
      version: 1,
    });
    expect(created.body.secret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    // 09:00 in Berlin is 07:00 or 08:00 UTC depending on the season.
    expect(created.body.nextRunAt).toMatch(/T0[78]:00:00\.000Z$/);

    const fetched = await ctx.api.call('GET', '/v1/tasks/nightly-report');
    expect(fetched.status).toBe(200);
    expect(fetched.body.secret).toBeUndefined();
    expect(fetched.body.upcoming).toHaveLength(5);
    expect(fetched.body.upcoming[0]).toBe(created.body.nextRunAt);
    expect(fetched.body.lastExecution).toBeNull();

    const again = await ctx.api.call('POST', '/v1/tasks', nightly);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('name_taken');
  });

  it.each([
    [{ ...nightly, name: 'bad-cron', schedule: { cron: '61 * * * *' } }, 'schedule.cron', 'invalid_schedule'],
    [
      { ...nightly, name: 'bad-zone', schedule: { cron: '0 9 * * *', timezone: 'Mars/Olympus' } },
      'schedule.timezone',
      'invalid_schedule',
    ],
    [{ ...nightly, name: 'Bad Name!' }, 'name', 'validation_failed'],
    [{ ...nightly, name: 'cron-tz', schedule: { cron: 'CRON_TZ=UTC 0 9 * * *' } }, 'schedule.cron', 'invalid_schedule'],
    [{ ...nightly, name: 'two-kinds', schedule: { cron: '* * * * *', every: '1m' } }, 'schedule', 'invalid_schedule'],
    [{ ...nightly, name: 'bad-duration', policy: { maxDelay: '1 fortnight' } }, 'policy.maxDelay', 'validation_failed'],
    [
      { ...nightly, name: 'flow-empty-key', policy: { concurrency: { key: '', limit: 3 } } },
      'policy.concurrency.key',
      'validation_failed',
    ],
    [
      { ...nightly, name: 'flow-long-key', policy: { concurrency: { key: 'k'.repeat(201), limit: 3 } } },
      'policy.concurrency.key',
      'validation_failed',
    ],
    [
      { ...nightly, name: 'flow-zero', policy: { concurrency: { key: 'openai', limit: 0 } } },
      'policy.concurrency.limit',
      'validation_failed',
    ],
    [
      { ...nightly, name: 'flow-huge', policy: { rateLimit: { key: 'openai', limit: 10_001, per: '1m' } } },
      'policy.rateLimit.limit',
      'validation_failed',
    ],
    [
      { ...nightly, name: 'flow-short', policy: { rateLimit: { key: 'mail', limit: 5, per: '50ms' } } },
      'policy.rateLimit.per',
      'validation_failed',
    ],
    [
      { ...nightly, name: 'flow-long', policy: { rateLimit: { key: 'mail', limit: 5, per: '25h' } } },
      'policy.rateLimit.per',
      'validation_failed',
    ],
  ])('refuses %o with 422 naming %s, and stores nothing', async (body, field, code) => {
    const before = await ctx.db.prisma.task.count();
    const res = await ctx.api.call('POST', '/v1/tasks', body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+/);
    expect(await ctx.db.prisma.task.count()).toBe(before);
  });

  it('flow control: keys and limits are stored and shown, changed by PATCH, removed with null; a malformed one is 400', async () => {
    const body = {
      ...nightly,
      name: 'flow-shown',
      policy: {
        concurrency: { key: 'twitter:acct-42', limit: 3 },
        rateLimit: { key: 'openai', limit: 500, per: '1m' },
      },
    };
    const created = await ctx.api.call('POST', '/v1/tasks', body);
    expect(created.status).toBe(201);
    expect(created.body.policy).toMatchObject({
      concurrency: { key: 'twitter:acct-42', limit: 3 },
      rateLimit: { key: 'openai', limit: 500, per: '1m' },
    });
    // A flow change is not a re-plan: the slots planned keep their plan version.
    const patched = await ctx.api.call('PATCH', '/v1/tasks/flow-shown', {
      policy: { concurrency: { key: 'twitter:acct-42', limit: 1 }, rateLimit: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.policy).toMatchObject({
      concurrency: { key: 'twitter:acct-42', limit: 1 },
      rateLimit: null,
      overlap: 'skip',
    });
    const row = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'flow-shown' } });
    expect(row).toMatchObject({
      concurrencyKey: 'twitter:acct-42',
      concurrencyLimit: 1,
      rateKey: null,
      rateLimit: null,
      ratePerMs: null,
      planVersion: 1,
    });
    const plain = await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'flow-none' });
    expect(plain.body.policy).toMatchObject({ concurrency: null, rateLimit: null });

    const before = await ctx.db.prisma.task.count();
    // A wrong JSON type, a missing or unknown field: malformed, as everywhere in the API.
    const malformed = [
      { concurrency: { key: 'a', limit: '3' } },
      { concurrency: { key: 'a', limit: 1.5 } },
      { concurrency: { key: 'a', limit: 3, burst: 2 } },
      { rateLimit: { key: 'a', limit: 5 } },
      { rateLimit: 'openai' },
    ];
    for (const policy of malformed) {
      const res = await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'flow-malformed', policy });
      expect(res.status, JSON.stringify(policy)).toBe(400);
      expect(res.body.error.details[0].field).toMatch(/^policy\.(concurrency|rateLimit)/);
    }
    expect(await ctx.db.prisma.task.count()).toBe(before);
  });

  it('one-off local times: a time the clocks skip or repeat needs a disambiguation (422 otherwise)', async () => {
    const body = (at: string, disambiguation?: string) => ({
      name: `at-${Math.random().toString(36).slice(2, 8)}`,
      handler: 'noop',
      schedule: { at, timezone: 'America/New_York', disambiguation },
    });
    const skipped = await ctx.api.call('POST', '/v1/tasks', body('2027-03-14T02:30:00'));
    expect(skipped.status).toBe(422);
    expect(skipped.body.error).toMatchObject({ code: 'ambiguous_local_time', details: [{ field: 'schedule.at' }] });
    expect((await ctx.api.call('POST', '/v1/tasks', body('2027-11-07T01:30:00'))).body.error.code).toBe(
      'ambiguous_local_time',
    );
    const later = await ctx.api.call('POST', '/v1/tasks', body('2027-03-14T02:30:00', 'compatible'));
    expect(later.status).toBe(201);
    expect(later.body.nextRunAt).toBe('2027-03-14T07:30:00.000Z');
    const rrule = await ctx.api.call('POST', '/v1/tasks', {
      name: 'weekly-rrule',
      handler: 'noop',
      schedule: {
        rrule: 'DTSTART;TZID=Europe/Berlin:20270104T090000\nRRULE:FREQ=WEEKLY;COUNT=3',
        timezone: 'Europe/Berlin',
      },
    });
    expect(rrule.status).toBe(201);
    expect(rrule.body.nextRunAt).toBe('2027-01-04T08:00:00.000Z');
    expect((await ctx.api.call('GET', '/v1/tasks/weekly-rrule')).body.upcoming).toEqual([
      '2027-01-04T08:00:00.000Z',
      '2027-01-11T08:00:00.000Z',
      '2027-01-18T08:00:00.000Z',
    ]);
  });

  it('answers malformed requests with 400, unknown fields included', async () => {
    expect((await ctx.api.call('POST', '/v1/tasks', '{"name": ')).body.error.code).toBe('malformed_json');
    const unknown = await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'x1', colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].field).toBe('colour');
    const wrongType = await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'x2', schedule: 'daily' });
    expect(wrongType.status).toBe(400);
    const huge = await ctx.api.call('POST', '/v1/tasks', {
      ...nightly,
      name: 'x3',
      payload: { blob: 'x'.repeat(300 * 1024) },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
  });

  it('needs the admin key', async () => {
    const res = await fetch(`${ctx.api.base}/v1/tasks`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe('unauthenticated');
    const wrong = await ctx.api.call('GET', '/v1/tasks', undefined, { authorization: 'Bearer not-the-key' });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${ctx.api.base}/health/live`)).status).toBe(200);
    expect((await fetch(`${ctx.api.base}/health/ready`)).status).toBe(200);
  });

  it('PUT creates (201) then replaces (200) idempotently; a schedule change restarts the cursor', async () => {
    const body = { handler: 'noop', schedule: { every: '15m' } };
    const first = await ctx.api.call('PUT', '/v1/tasks/put-me', body);
    expect(first.status).toBe(201);
    expect(first.body.secret).toBeDefined();
    const same = await ctx.api.call('PUT', '/v1/tasks/put-me', body);
    expect(same.status).toBe(200);
    expect(same.body.nextRunAt).toBe(first.body.nextRunAt);
    expect(same.body.version).toBe(2);
    const changed = await ctx.api.call('PUT', '/v1/tasks/put-me', {
      handler: 'noop',
      schedule: { cron: '*/5 * * * *' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.schedule).toMatchObject({ cron: '*/5 * * * *' });
    expect(changed.body.schedule.every).toBeUndefined();
    expect(Date.parse(changed.body.nextRunAt) % 300_000).toBe(0);
  });

  it('PUT refuses a name in the URL that no task may have, or that the body contradicts', async () => {
    const body = { handler: 'noop', schedule: { every: '15m' } };
    const badName = await ctx.api.call('PUT', '/v1/tasks/Bad%20Name', body);
    expect([badName.status, badName.body.error.code, badName.body.error.details]).toEqual([
      422,
      'invalid_name',
      [{ field: 'name', message: expect.stringContaining('name must match') }],
    ]);
    const mismatch = await ctx.api.call('PUT', '/v1/tasks/put-other', { ...body, name: 'put-another' });
    expect([mismatch.status, mismatch.body.error.code]).toEqual([422, 'name_mismatch']);
    expect(await ctx.db.prisma.task.count({ where: { name: { in: ['Bad Name', 'put-other', 'put-another'] } } })).toBe(
      0,
    );
  });

  it('PATCH names at most one schedule kind, which replaces the current one', async () => {
    expect(
      (await ctx.api.call('PUT', '/v1/tasks/patch-kind', { handler: 'noop', schedule: { every: '15m' } })).status,
    ).toBe(201);
    const two = await ctx.api.call('PATCH', '/v1/tasks/patch-kind', {
      schedule: { cron: '0 9 * * *', at: '2099-01-01T00:00:00Z' },
    });
    expect([two.status, two.body.error.code, two.body.error.details.map((d: { field: string }) => d.field)]).toEqual([
      422,
      'invalid_schedule',
      ['schedule'],
    ]);
    const zone = await ctx.api.call('PATCH', '/v1/tasks/patch-kind', { schedule: { timezone: 'Europe/Berlin' } });
    expect([zone.status, zone.body.schedule.every, zone.body.schedule.timezone]).toEqual([200, '15m', 'Europe/Berlin']);
    const cron = await ctx.api.call('PATCH', '/v1/tasks/patch-kind', { schedule: { cron: '0 9 * * *' } });
    expect([cron.status, cron.body.schedule.cron, cron.body.schedule.every]).toEqual([200, '0 9 * * *', undefined]);
  });

  it('lists tasks with keyset pagination and filters', async () => {
    for (const name of ['list-a', 'list-b', 'list-c'])
      expect((await ctx.api.call('POST', '/v1/tasks', { ...nightly, name })).status).toBe(201);
    const page1 = await ctx.api.call('GET', '/v1/tasks?q=list-&limit=2');
    expect(page1.body.items.map((t: { name: string }) => t.name)).toEqual(['list-a', 'list-b']);
    const page2 = await ctx.api.call('GET', `/v1/tasks?q=list-&limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.body.items.map((t: { name: string }) => t.name)).toEqual(['list-c']);
    expect(page2.body.nextCursor).toBeNull();
    const byHandler = await ctx.api.call('GET', '/v1/tasks?handler=noop');
    expect(byHandler.body.items.every((t: { handler: string }) => t.handler === 'noop')).toBe(true);
    expect((await ctx.api.call('GET', '/v1/tasks?limit=0')).status).toBe(422);
    expect((await ctx.api.call('GET', '/v1/tasks?limit=ten')).status).toBe(400);
  });

  it('deletes a task: 204, pending executions cancelled, slots to come withdrawn, history kept (and listed under its name); 404 after', async () => {
    const created = await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'doomed' });
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'doomed' } });
    const row = { taskId: task.id, taskName: 'doomed', fireAt: new Date(), taskVersion: 1 };
    await ctx.db.historyAt(1000);
    await ctx.db.prisma.taskExecution.createMany({
      data: [
        { id: executionIdFor(new Date(1000)), ...row, scheduledFor: new Date(1000), status: 'succeeded' },
        { id: executionIdFor(new Date(2000)), ...row, scheduledFor: new Date(2000), status: 'scheduled' },
        { id: executionIdFor(new Date(3000)), ...row, scheduledFor: new Date(3000), status: 'queued' },
      ],
    });
    // Two slots planned ahead, not yet due: withdrawn by the delete, never listed as cancelled runs.
    const ahead = [Date.now() + 3_600_000, Date.now() + 7_200_000].map((at) => new Date(Math.floor(at / 1000) * 1000));
    for (const at of ahead) await ctx.db.historyAt(at);
    await ctx.db.prisma.taskExecution.createMany({
      data: ahead.map((at, i) => ({
        id: executionIdFor(at),
        ...row,
        scheduledFor: at,
        fireAt: at,
        status: i === 0 ? ('queued' as const) : ('scheduled' as const),
      })),
    });
    expect(created.status).toBe(201);
    expect((await ctx.api.call('DELETE', '/v1/tasks/doomed')).status).toBe(204);
    const left = await ctx.db.prisma.taskExecution.findMany({
      where: { taskName: 'doomed' },
      orderBy: { scheduledFor: 'asc' },
    });
    expect(left.map((e) => [e.status, e.taskId])).toEqual([
      ['succeeded', null],
      ['cancelled', null],
      ['cancelled', null],
    ]);
    const history = await ctx.api.call('GET', '/v1/tasks/doomed/executions');
    expect(history.status).toBe(200);
    expect(history.body.items.map((e: { id: string }) => e.id)).toEqual([...left].reverse().map((e) => e.id));
    expect((await ctx.api.call('GET', '/v1/tasks/doomed')).status).toBe(404);
    expect((await ctx.api.call('DELETE', '/v1/tasks/doomed')).status).toBe(404);
  });

  it('shows executions newest first, and one execution with its events', async () => {
    await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'history' });
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'history' } });
    const ids = [1, 2, 3].map(() => crypto.randomUUID());
    await ctx.db.prisma.taskExecution.createMany({
      data: ids.map((id, i) => ({
        id,
        taskId: task.id,
        taskName: 'history',
        scheduledFor: new Date(Date.now() - (3 - i) * 1000),
        fireAt: new Date(Date.now() - (3 - i) * 1000),
        taskVersion: 1,
        status: 'queued' as const,
        queuedAt: new Date(),
        exclusive: false,
      })),
    });
    await ctx.db.claim({ id: ids[2]!, attemptId: crypto.randomUUID(), workerId: 'w1' });
    const page = await ctx.api.call('GET', '/v1/tasks/history/executions?limit=2');
    expect(page.body.items.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    const rest = await ctx.api.call('GET', `/v1/tasks/history/executions?limit=2&cursor=${page.body.nextCursor}`);
    expect(rest.body.items.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    const one = await ctx.api.call('GET', `/v1/executions/${ids[2]}`);
    expect(one.body).toMatchObject({ id: ids[2], task: 'history', status: 'running', attempt: 1, workerId: 'w1' });
    expect(one.body.events).toEqual([
      expect.objectContaining({ from: 'scheduled', to: 'queued', workerId: null }),
      expect.objectContaining({ from: 'queued', to: 'running', workerId: 'w1', detail: { attempt: 1 } }),
    ]);
    expect((await ctx.api.call('GET', '/v1/executions/not-a-uuid')).status).toBe(404);
    expect((await ctx.api.call('GET', `/v1/executions/${crypto.randomUUID()}`)).status).toBe(404);
  });

  it('labels and managedBy: set on create, filtered (labels AND-ed), changed by PATCH, never re-planning', async () => {
    const make = (name: string, labels: Record<string, string>, managedBy?: string) =>
      ctx.api.call('POST', '/v1/tasks', { ...nightly, name, labels, ...(managedBy && { managedBy }) });
    expect((await make('lab-a', { team: 'billing', tier: 'gold' }, 'punctual-apply')).body).toMatchObject({
      labels: { team: 'billing', tier: 'gold' },
      managedBy: 'punctual-apply',
    });
    await make('lab-b', { team: 'billing' });
    await make('lab-c', { team: 'search', tier: 'gold' });
    const names = async (query: string) =>
      (await ctx.api.call('GET', `/v1/tasks?${query}`)).body.items.map((t: { name: string }) => t.name);
    expect(await names('label=team=billing')).toEqual(['lab-a', 'lab-b']);
    expect(await names('label=team=billing&label=tier=gold')).toEqual(['lab-a']);
    expect(await names('label=tier=gold&q=lab-')).toEqual(['lab-a', 'lab-c']);
    expect(await names('managedBy=punctual-apply')).toEqual(['lab-a']);
    expect((await ctx.api.call('GET', '/v1/tasks?label=team')).status).toBe(422);
    const before = await ctx.api.call('GET', '/v1/tasks/lab-b');
    const patched = await ctx.api.call('PATCH', '/v1/tasks/lab-b', { labels: { team: 'search' }, managedBy: 'ops' });
    expect(patched.body).toMatchObject({
      labels: { team: 'search' },
      managedBy: 'ops',
      nextRunAt: before.body.nextRunAt,
    });
    expect((await ctx.api.call('PATCH', '/v1/tasks/lab-b', { managedBy: null })).body.managedBy).toBeNull();
    const refused = await ctx.api.call('POST', '/v1/tasks', {
      ...nightly,
      name: 'lab-bad',
      labels: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])),
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details[0].field).toBe('labels');
    expect(
      (await ctx.api.call('POST', '/v1/tasks', { ...nightly, name: 'lab-bad', labels: { 'Bad Key': 'v' } })).status,
    ).toBe(422);
  });
});
