import { type RouteDef, routes } from '@punctual/contract';
import { quotaFlowKey } from '@punctual/planning';
import { FLOW_WAKE_CHANNEL } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../support/api.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';

type Role = 'viewer' | 'operator' | 'admin';
const ROLES: Role[] = ['viewer', 'operator', 'admin'];
const NAMESPACES = ['default', 'team-a', 'team-b'] as const;
type Ns = (typeof NAMESPACES)[number];

/** A word only the namespace's own objects carry: an answer holding another's is a leak. */
const marker = (ns: Ns) => `marker-of-${ns}`;
const query = (ns: Ns) => (ns === 'default' ? '' : `?namespace=${ns}`);
const withNs = (path: string, ns: Ns) => `${path}${path.includes('?') ? '&' : '?'}namespace=${ns}`;

/** The smallest body each route of a namespace takes (a 4xx past the namespace is fine). */
const BODIES: Partial<Record<keyof typeof routes, unknown>> = {
  createTask: { name: 'created-by-matrix', handler: 'noop', schedule: { cron: '0 0 1 1 *' } },
  batchTasks: { tasks: [] },
  applyTasks: { tasks: [], dryRun: true },
  putTask: { handler: 'noop', schedule: { cron: '0 0 1 1 *' }, description: 'replaced' },
  patchTask: { description: 'patched' },
  resumeTask: {},
  triggerTask: {},
  backfillTask: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' },
  rollbackTask: { version: 1, dryRun: true },
  previewSchedule: { schedule: { cron: '* * * * *' }, count: 1 },
  putCalendar: { dates: ['2026-12-25'] },
};

describe('namespaces: scoped keys see nothing outside their namespaces', () => {
  let sandbox: Sandbox;
  let api: Awaited<ReturnType<typeof startApi>>;
  /** Keys scoped to team-a, by role. */
  const scoped: Record<Role, string> = { viewer: '', operator: '', admin: '' };
  const executionOf: Record<string, string> = {};

  beforeAll(async () => {
    sandbox = await createSandbox();
    api = await startApi(sandbox);
    for (const ns of ['team-a', 'team-b'])
      expect((await api.call('PUT', `/v1/namespaces/${ns}`, { description: `the ${ns} team` })).status).toBe(201);
    // The same names in every namespace: names are unique per namespace only.
    for (const ns of NAMESPACES) {
      const cal = await api.call('PUT', `/v1/calendars/holidays${query(ns)}`, {
        description: marker(ns),
        dates: ['2026-12-25'],
      });
      expect(cal.status).toBe(201);
      const task = await api.call('POST', `/v1/tasks${query(ns)}`, {
        name: 'report',
        description: marker(ns),
        handler: 'noop',
        schedule: { cron: '0 9 * * *', exclude: ['holidays'] },
        labels: { owner: marker(ns) },
      });
      expect(task.status, JSON.stringify(task.body)).toBe(201);
      expect(task.body).toMatchObject({ name: 'report', namespace: ns, schedule: { exclude: ['holidays'] } });
      const run = await api.call('POST', `/v1/tasks/report/trigger${query(ns)}`, {});
      expect(run.status).toBe(202);
      expect(run.body.task).toBe('report');
      executionOf[ns] = run.body.id;
    }
    for (const role of ROLES) {
      const res = await api.call('POST', '/v1/api-keys', { name: `${role}-a`, role, namespaces: ['team-a'] });
      expect(res.status).toBe(201);
      expect(res.body.namespaces).toEqual(['team-a']);
      scoped[role] = res.body.key;
    }
  });
  afterAll(async () => {
    await api?.close();
    await sandbox?.dispose();
  });

  /** Every route of a namespace, its path filled with the objects of `ns`. */
  const namespacedRoutes = () =>
    (Object.entries(routes) as [keyof typeof routes, RouteDef][]).filter(([, r]) => !r.cluster);
  const pathOf = (route: RouteDef, ns: Ns) =>
    route.path
      .replace('{name}', route.tag === 'calendars' ? 'holidays' : 'report')
      .replace('{id}', executionOf[ns]!)
      .replace('{version}', '1');

  it('answers 404 on every route of another namespace, for every role: a matrix with no leak', async () => {
    let checked = 0;
    const leaks: string[] = [];
    for (const [id, route] of namespacedRoutes())
      for (const role of ROLES)
        for (const ns of ['default', 'team-b'] as const) {
          const res = await api.call(route.method, withNs(pathOf(route, ns), ns), BODIES[id], {}, scoped[role]);
          checked++;
          if (res.status !== 404 || JSON.stringify(res.body).includes('marker-of'))
            leaks.push(`${role} ${route.method} ${route.path} in ${ns}: ${res.status} ${JSON.stringify(res.body)}`);
          // Word for word what a namespace that does not exist answers: nothing confirms the other one.
          if (ns === 'team-b')
            expect(res.body.error.message).toBe('no namespace named "team-b"; this key may see team-a');
        }
    expect(leaks).toEqual([]);
    expect(checked).toBe(namespacedRoutes().length * ROLES.length * 2);
    expect(checked).toBeGreaterThan(150);
    const missing = await api.call('GET', '/v1/tasks?namespace=no-such-team', undefined, {}, scoped.viewer);
    expect(missing.body.error.message).toBe('no namespace named "no-such-team"; this key may see team-a');
  });

  it('reaches another namespace through no id or name in its own: executions, names and lists stay inside', async () => {
    for (const role of ROLES) {
      const key = scoped[role];
      // Another namespace's execution, asked for through team-a: the same 404 as an unknown id.
      for (const ns of ['default', 'team-b'] as const) {
        for (const suffix of ['', '/retry', '/cancel']) {
          const method = suffix ? 'POST' : 'GET';
          const res = await api.call(
            method,
            `/v1/executions/${executionOf[ns]}${suffix}?namespace=team-a`,
            undefined,
            {},
            key,
          );
          if (role === 'viewer' && suffix) expect(res.status).toBe(403);
          else expect(res.status, `${role} ${method} ${suffix}`).toBe(404);
        }
      }
      // A name means team-a's object.
      const task = await api.call('GET', '/v1/tasks/report?namespace=team-a', undefined, {}, key);
      expect(task.body).toMatchObject({ name: 'report', namespace: 'team-a', description: marker('team-a') });
      const lists = await Promise.all(
        [
          '/v1/tasks',
          '/v1/executions',
          '/v1/calendars',
          '/v1/tasks/report/executions',
          '/v1/tasks/report/versions',
        ].map((path) => api.call('GET', `${path}?namespace=team-a`, undefined, {}, key)),
      );
      for (const list of lists) {
        expect(list.status).toBe(200);
        expect(list.body.items.length).toBeGreaterThan(0);
        const text = JSON.stringify(list.body);
        expect(text).not.toContain(marker('team-b'));
        expect(text).not.toContain(marker('default'));
        expect(text).not.toContain(executionOf['team-b']);
        expect(text).not.toContain('team-a/'); // names are shown bare, never as keys
      }
      expect(lists[1]!.body.items.map((e: { id: string }) => e.id)).toEqual([executionOf['team-a']]);
    }
    // An admin key of the whole cluster sees each namespace apart.
    for (const ns of NAMESPACES) {
      const list = await api.call('GET', `/v1/tasks${query(ns)}`);
      expect(list.body.items.map((t: { description: string }) => t.description)).toEqual([marker(ns)]);
      const calendar = await api.call('GET', `/v1/calendars/holidays${query(ns)}`);
      expect(calendar.body).toMatchObject({ name: 'holidays', description: marker(ns), tasks: ['report'] });
    }
  });

  it('keeps the cluster to keys of the whole cluster: keys, namespaces, metrics and Bull Board are 403', async () => {
    for (const role of ROLES) {
      const key = scoped[role];
      for (const [method, path, body] of [
        ['GET', '/v1/api-keys'],
        ['POST', '/v1/api-keys', { name: 'escalate', role: 'admin' }],
        ['PUT', '/v1/namespaces/team-a', { quotas: { maxTasks: 1_000_000 } }],
        ['DELETE', '/v1/namespaces/team-b'],
        ['GET', '/metrics'],
        ['GET', '/admin/queues/api/queues'],
      ] as [string, string, unknown?][]) {
        const res = await api.call(method, path, body, {}, key);
        expect(res.status, `${role} ${method} ${path}`).toBe(403);
        expect(JSON.stringify(res.body)).not.toContain('marker-of');
      }
      const namespaces = await api.call('GET', '/v1/namespaces', undefined, {}, key);
      expect(namespaces.body.items.map((n: { name: string }) => n.name)).toEqual(['team-a']);
      expect((await api.call('GET', '/v1/namespaces/team-b', undefined, {}, key)).status).toBe(404);
      expect((await api.call('GET', '/v1/namespaces/team-a', undefined, {}, key)).body.use.maxTasks.used).toBe(1);
      const me = await api.call('GET', '/v1/me', undefined, {}, key);
      expect(me.body).toMatchObject({ role, namespaces: ['team-a'] });
      const cluster = await api.call('GET', '/v1/cluster', undefined, {}, key);
      expect(cluster.status).toBe(200);
      expect(cluster.body.flow).toEqual([]);
    }
    // The audit log of team-a: its own entries only, never the cluster's (keys, namespaces).
    const audit = await api.call('GET', '/v1/audit?namespace=team-a', undefined, {}, scoped.admin);
    expect(audit.status).toBe(200);
    expect(audit.body.items.length).toBeGreaterThan(0);
    for (const entry of audit.body.items) expect(entry).toMatchObject({ namespace: 'team-a' });
    expect(JSON.stringify(audit.body)).not.toContain('team-a/'); // names bare, before and after too
    expect(audit.body.items.some((e: { after: { name?: string } | null }) => e.after?.name === 'report')).toBe(true);
    const whole = await api.call('GET', '/v1/audit?action=namespace.put');
    expect(whole.body.items.map((e: { target: string }) => e.target).sort()).toEqual(['team-a', 'team-b']);
  });

  it('lists namespaces a page at a time by name, those starting with a prefix, and a scoped key its own only', async () => {
    const names = Array.from({ length: 7 }, (_, i) => `paged-${i}`);
    for (const ns of names) expect((await api.call('PUT', `/v1/namespaces/${ns}`, {})).status).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.call('GET', `/v1/namespaces?prefix=paged-&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.items.map((n: { name: string }) => n.name));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect([seen, pages]).toEqual([names, 3]);
    // Each item still carries its use.
    const first = await api.call('GET', '/v1/namespaces?prefix=team-a');
    expect(
      first.body.items.map((n: { name: string; use: { maxTasks: { used: number } } }) => [n.name, n.use.maxTasks.used]),
    ).toEqual([['team-a', 1]]);
    // A key scoped to team-a pages through team-a only, whatever it asks.
    const key = scoped.viewer;
    expect((await api.call('GET', '/v1/namespaces?limit=1', undefined, {}, key)).body).toMatchObject({
      items: [{ name: 'team-a' }],
    });
    expect((await api.call('GET', '/v1/namespaces?prefix=paged-', undefined, {}, key)).body.items).toEqual([]);
    // Bad pages: a cursor this API did not write, a prefix no name starts with, a limit past the cap.
    for (const [query, status] of [
      ['cursor=abc', 400],
      ['prefix=Team%20A', 422],
      ['limit=501', 422],
    ] as const) {
      const res = await api.call('GET', `/v1/namespaces?${query}`);
      expect([query, res.status]).toEqual([query, status]);
      expect(res.body.error.code).toBeTruthy();
    }
  });

  it('reaches no namespace through a name: an escaped "/" in a path names nothing, for any key', async () => {
    const defaultOnly = (
      await api.call('POST', '/v1/api-keys', { name: 'default-admin', role: 'admin', namespaces: ['default'] })
    ).body.key as string;
    for (const [key, ns] of [
      [defaultOnly, 'default'],
      [scoped.admin, 'team-a'],
      [undefined, 'default'],
    ] as const) {
      for (const [method, path, body] of [
        ['GET', '/v1/tasks/team-b%2Freport'],
        ['GET', '/v1/tasks/team-b%2Freport/executions'],
        ['GET', '/v1/tasks/team-b%2Freport/versions'],
        ['GET', '/v1/tasks/team-b%2Freport/timeline'],
        ['PATCH', '/v1/tasks/team-b%2Freport', { description: 'taken' }],
        ['POST', '/v1/tasks/team-b%2Freport/pause'],
        ['DELETE', '/v1/tasks/team-b%2Freport'],
        ['GET', '/v1/calendars/team-b%2Fholidays'],
        ['DELETE', '/v1/calendars/team-b%2Fholidays'],
      ] as [string, string, unknown?][]) {
        const res = await api.call(method, withNs(path, ns), body, {}, key);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(JSON.stringify(res.body)).not.toContain('marker-of');
      }
      const put = await api.call(
        'PUT',
        withNs('/v1/calendars/team-b%2Fholidays', ns),
        { dates: ['2027-01-01'] },
        {},
        key,
      );
      expect(put.status, JSON.stringify(put.body)).toBe(422);
      const putTask = await api.call('PUT', withNs('/v1/tasks/team-b%2Freport', ns), BODIES.putTask, {}, key);
      expect(putTask.status, JSON.stringify(putTask.body)).toBe(422);
    }
    expect((await api.call('GET', '/v1/tasks/report?namespace=team-b')).body.description).toBe(marker('team-b'));
    expect((await api.call('GET', '/v1/calendars/holidays?namespace=team-b')).body.dates).toEqual(['2026-12-25']);
  });

  it("searches names, not the namespace in the keys; previews with the namespace's calendars", async () => {
    const search = async (q: string) =>
      (await api.call('GET', `/v1/tasks?namespace=team-a&q=${q}`)).body.items.map((t: { name: string }) => t.name);
    expect(await search('a%2Frep')).toEqual([]); // only the key `team-a/report` holds "a/rep"
    expect(await search('repo')).toEqual(['report']);
    // team-a's own holidays (the 25th) leave out the 25th; another namespace's calendar is unknown here.
    expect((await api.call('PUT', '/v1/calendars/new-year?namespace=team-b', { dates: ['2027-01-01'] })).status).toBe(
      201,
    );
    const preview = (ns: string, exclude: string) =>
      api.call('POST', `/v1/schedules/preview?namespace=${ns}`, {
        schedule: { cron: '0 12 * * *', exclude: [exclude] },
        from: '2026-12-24T00:00:00Z',
        count: 2,
      });
    const own = await preview('team-a', 'holidays');
    expect(own.status).toBe(200);
    expect(own.body.fireTimes.map((f: { at: string }) => f.at)).toEqual([
      '2026-12-24T12:00:00.000Z',
      '2026-12-26T12:00:00.000Z',
    ]);
    expect((await preview('team-a', 'new-year')).status).toBe(422);
  });

  it('writes with a scoped admin key inside its namespace only', async () => {
    const created = await api.call(
      'POST',
      '/v1/tasks?namespace=team-a',
      { name: 'scoped-write', handler: 'noop', schedule: { cron: '0 0 1 1 *' } },
      {},
      scoped.admin,
    );
    expect(created.status).toBe(201);
    expect(created.body.namespace).toBe('team-a');
    expect((await api.call('GET', '/v1/tasks/scoped-write')).status).toBe(404);
    expect((await api.call('GET', '/v1/tasks/scoped-write?namespace=team-b')).status).toBe(404);
    expect(
      (await api.call('DELETE', '/v1/tasks/scoped-write?namespace=team-a', undefined, {}, scoped.admin)).status,
    ).toBe(204);
  });
});

describe('namespaces: quotas and bad input', () => {
  let sandbox: Sandbox;
  let api: Awaited<ReturnType<typeof startApi>>;
  const spec = (name: string) => ({ name, handler: 'noop', schedule: { cron: '0 0 1 1 *' } });
  const count = async (ns: string) => (await api.call('GET', `/v1/tasks?namespace=${ns}&limit=200`)).body.items.length;

  beforeAll(async () => {
    sandbox = await createSandbox();
    api = await startApi(sandbox);
  });
  afterAll(async () => {
    await api?.close();
    await sandbox?.dispose();
  });

  it('accepts exactly maxTasks tasks and refuses one more with 429 quota_exceeded, storing nothing', async () => {
    const put = await api.call('PUT', '/v1/namespaces/quota-team', { quotas: { maxTasks: 3 } });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({
      name: 'quota-team',
      quotas: { maxTasks: 3, maxRunsPerMinute: null, maxConcurrentRuns: null },
      use: { maxTasks: { used: 0, limit: 3 } },
    });
    expect((await api.call('POST', '/v1/tasks?namespace=quota-team', spec('one'))).status).toBe(201);
    // A batch that would pass the quota stores none of its tasks.
    const batch = await api.call('POST', '/v1/tasks:batch?namespace=quota-team', {
      tasks: [spec('two'), spec('three'), spec('four')],
    });
    expect(batch.status).toBe(429);
    expect(batch.body.error).toMatchObject({ code: 'quota_exceeded' });
    expect(batch.body.error.message).toContain('maxTasks is 3');
    expect(batch.body.error.message).toContain('holds 1 task(s)');
    expect(await count('quota-team')).toBe(1);
    expect(
      (await api.call('POST', '/v1/tasks:batch?namespace=quota-team', { tasks: [spec('two'), spec('three')] })).status,
    ).toBe(200);
    expect(await count('quota-team')).toBe(3);
    // One more: by create, by PUT, by apply. Each refused, nothing stored, nothing audited.
    const auditBefore = (await api.call('GET', '/v1/audit?namespace=quota-team&limit=200')).body.items.length;
    for (const [method, path, body] of [
      ['POST', '/v1/tasks?namespace=quota-team', spec('four')],
      ['PUT', '/v1/tasks/four?namespace=quota-team', { handler: 'noop', schedule: { cron: '0 0 1 1 *' } }],
      [
        'POST',
        '/v1/tasks:apply?namespace=quota-team',
        { managedBy: 'ci', tasks: [{ ...spec('four'), managedBy: 'ci' }] },
      ],
    ] as [string, string, unknown][]) {
      const res = await api.call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(429);
      expect(res.body.error.code).toBe('quota_exceeded');
      expect(res.body.error.details).toEqual([
        { field: 'quotas.maxTasks', message: 'used 3 of 3; this request adds 1' },
      ]);
    }
    expect(await count('quota-team')).toBe(3);
    expect((await api.call('GET', '/v1/audit?namespace=quota-team&limit=200')).body.items.length).toBe(auditBefore);
    // Replacing a task adds none: allowed at the quota. Other namespaces are not limited by it.
    expect(
      (
        await api.call('PUT', '/v1/tasks/one?namespace=quota-team', {
          handler: 'noop',
          schedule: { cron: '0 0 2 1 *' },
        })
      ).status,
    ).toBe(200);
    expect((await api.call('POST', '/v1/tasks', spec('four'))).status).toBe(201);
    const shown = await api.call('GET', '/v1/namespaces/quota-team');
    expect(shown.body.use).toEqual({
      maxTasks: { used: 3, limit: 3 },
      maxRunsPerMinute: { used: 0, limit: null },
      maxConcurrentRuns: { used: 0, limit: null },
    });
    // Raised by one: one more fits.
    expect((await api.call('PUT', '/v1/namespaces/quota-team', { quotas: { maxTasks: 4 } })).status).toBe(200);
    expect((await api.call('POST', '/v1/tasks?namespace=quota-team', spec('four'))).status).toBe(201);
    expect((await api.call('POST', '/v1/tasks?namespace=quota-team', spec('five'))).status).toBe(429);
  });

  it("wakes the runs held on a namespace's run quotas when the quotas change", async () => {
    // The workers' channel (FLOW_WAKE_CHANNEL under the prefix): a raised quota must not leave its
    // held runs to their own next ask.
    const redis = api.app.get(RedisService);
    const listener = redis.client.duplicate();
    const heard: string[] = [];
    listener.on('message', (_channel: string, key: string) => heard.push(key));
    await listener.subscribe(redis.key(FLOW_WAKE_CHANNEL));
    try {
      const wakes = () => heard.filter((k) => k === quotaFlowKey('woken-team')).length;
      const settle = () => new Promise((resolve) => setTimeout(resolve, 200));
      // Created with a quota: no run can be held on it yet, nobody to wake.
      expect((await api.call('PUT', '/v1/namespaces/woken-team', { quotas: { maxConcurrentRuns: 0 } })).status).toBe(
        201,
      );
      await settle();
      expect(wakes()).toBe(0);
      expect((await api.call('PUT', '/v1/namespaces/woken-team', { quotas: { maxConcurrentRuns: 5 } })).status).toBe(
        200,
      );
      await expect.poll(wakes).toBe(1);
      // A refused change wakes nobody.
      expect((await api.call('PUT', '/v1/namespaces/woken-team', { quotas: { maxConcurrentRuns: -1 } })).status).toBe(
        422,
      );
      await settle();
      expect(wakes()).toBe(1);
    } finally {
      listener.disconnect();
    }
  });

  it('sets and shows the run quotas, and writes them to the audit log', async () => {
    const put = await api.call('PUT', '/v1/namespaces/runs-team', {
      description: 'per-customer reminders',
      quotas: { maxRunsPerMinute: 600, maxConcurrentRuns: 0 },
    });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({
      quotas: { maxTasks: null, maxRunsPerMinute: 600, maxConcurrentRuns: 0 },
      use: {
        maxTasks: { used: 0, limit: null },
        maxRunsPerMinute: { used: 0, limit: 600 },
        maxConcurrentRuns: { used: 0, limit: 0 },
      },
    });
    // A PUT replaces: a quota left out has no limit again.
    const lifted = await api.call('PUT', '/v1/namespaces/runs-team', { quotas: { maxRunsPerMinute: 60 } });
    expect(lifted.body.quotas).toEqual({ maxTasks: null, maxRunsPerMinute: 60, maxConcurrentRuns: null });
    const audit = await api.call('GET', '/v1/audit?action=namespace.put&target=runs-team');
    const last = audit.body.items.find((e: { target: string }) => e.target === 'runs-team');
    expect(last).toMatchObject({
      before: { maxRunsPerMinute: 600, maxConcurrentRuns: 0 },
      after: { maxRunsPerMinute: 60, maxConcurrentRuns: null },
    });
  });

  it('holds the quota against concurrent creates: never more than maxTasks stored', async () => {
    expect((await api.call('PUT', '/v1/namespaces/race-team', { quotas: { maxTasks: 5 } })).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api.call('POST', '/v1/tasks?namespace=race-team', spec(`race-${i}`))),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
    expect(await count('race-team')).toBe(5);
  });

  it('refuses to delete a namespace that holds tasks or calendars, and default; deletes an empty one', async () => {
    expect((await api.call('PUT', '/v1/namespaces/short-lived', {})).status).toBe(201);
    expect((await api.call('POST', '/v1/tasks?namespace=short-lived', spec('only'))).status).toBe(201);
    const busy = await api.call('DELETE', '/v1/namespaces/short-lived');
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'namespace_in_use' });
    expect(busy.body.error.message).toContain('1 task(s)');
    expect((await api.call('DELETE', '/v1/tasks/only?namespace=short-lived')).status).toBe(204);
    expect((await api.call('PUT', '/v1/calendars/days?namespace=short-lived', { dates: ['2026-12-25'] })).status).toBe(
      201,
    );
    expect((await api.call('DELETE', '/v1/namespaces/short-lived')).status).toBe(409);
    expect((await api.call('DELETE', '/v1/calendars/days?namespace=short-lived')).status).toBe(204);
    expect((await api.call('DELETE', '/v1/namespaces/short-lived')).status).toBe(204);
    expect((await api.call('GET', '/v1/namespaces/short-lived')).status).toBe(404);
    expect((await api.call('GET', '/v1/tasks?namespace=short-lived')).status).toBe(404);
    expect((await api.call('DELETE', '/v1/namespaces/short-lived')).status).toBe(404);
    expect((await api.call('DELETE', '/v1/namespaces/default')).status).toBe(409);
  });

  it('refuses bad names and quotas with a 422 naming the field, and stores nothing', async () => {
    for (const name of ['Team_A', 'a'.repeat(64), 'dots.not.allowed']) {
      const res = await api.call('PUT', `/v1/namespaces/${name}`, {});
      expect(res.status, name).toBe(422);
      expect(res.body.error.details[0].field).toBe('namespace');
      const asked = await api.call('GET', `/v1/tasks?namespace=${name}`);
      expect(asked.status).toBe(422);
      expect(asked.body.error.details[0].field).toBe('namespace');
    }
    for (const [quota, value] of [
      ['maxTasks', -1],
      ['maxTasks', 10_000_001],
      ['maxRunsPerMinute', -1],
      ['maxRunsPerMinute', 10_000_001],
      ['maxConcurrentRuns', -1],
      ['maxConcurrentRuns', 1_000_001],
    ] as const) {
      const res = await api.call('PUT', '/v1/namespaces/bad-quota', { quotas: { [quota]: value } });
      expect(res.status, `${quota} ${value}`).toBe(422);
      expect(res.body.error.details[0].field).toBe(`quotas.${quota}`);
    }
    expect((await api.call('PUT', '/v1/namespaces/bad-quota', { quotas: { maxTask: 1 } })).status).toBe(400);
    expect((await api.call('GET', '/v1/namespaces/bad-quota')).status).toBe(404);
    const key = await api.call('POST', '/v1/api-keys', { name: 'k', role: 'viewer', namespaces: ['no-such'] });
    expect(key.status).toBe(422);
    expect(key.body.error.details[0].field).toBe('namespaces[0]');
    expect((await api.call('GET', '/v1/api-keys')).body.items).toEqual([]);
    // A route of the whole cluster takes no namespace.
    expect((await api.call('GET', '/v1/handlers?namespace=default')).status).toBe(400);
  });

  it("refuses a flow-control key that would name another namespace's capacity, from any namespace, and stores nothing", async () => {
    expect((await api.call('PUT', '/v1/namespaces/capacity-b', {})).status).toBe(201);
    for (const [policy, field] of [
      [{ concurrency: { key: 'team-a/openai', limit: 10_000 } }, 'policy.concurrency.key'],
      [{ rateLimit: { key: 'team-a/openai', limit: 5, per: '1s' } }, 'policy.rateLimit.key'],
    ] as const)
      for (const namespace of ['default', 'capacity-b']) {
        const res = await api.call('POST', `/v1/tasks?namespace=${namespace}`, {
          name: 'takes-capacity',
          handler: 'noop',
          schedule: { cron: '* * * * *' },
          policy,
        });
        expect(res.status, `${field} in ${namespace}: ${JSON.stringify(res.body)}`).toBe(422);
        expect(res.body.error.details[0].field).toBe(field);
        expect(res.body.error.details[0].message).toContain('"/"');
      }
    for (const namespace of ['default', 'capacity-b'])
      expect((await api.call('GET', `/v1/tasks/takes-capacity?namespace=${namespace}`)).status).toBe(404);
  });

  it('deletes a namespace with its history and its keys: one created again by the name starts empty', async () => {
    expect((await api.call('PUT', '/v1/namespaces/gone', { quotas: { maxTasks: 1 } })).status).toBe(201);
    expect((await api.call('PUT', '/v1/namespaces/kept', {})).status).toBe(201);
    const only = (await api.call('POST', '/v1/api-keys', { name: 'gone-only', role: 'admin', namespaces: ['gone'] }))
      .body;
    const both = (
      await api.call('POST', '/v1/api-keys', { name: 'both', role: 'viewer', namespaces: ['gone', 'kept'] })
    ).body;
    expect((await api.call('POST', '/v1/tasks?namespace=gone', spec('old'), {}, only.key)).status).toBe(201);
    const run = await api.call('POST', '/v1/tasks/old/trigger?namespace=gone', {}, {}, only.key);
    expect(run.status).toBe(202);
    expect((await api.call('DELETE', '/v1/tasks/old?namespace=gone')).status).toBe(204);
    // Its history is still there while the namespace is.
    expect((await api.call('GET', '/v1/tasks/old/executions?namespace=gone')).body.items).toHaveLength(1);
    expect((await api.call('DELETE', '/v1/namespaces/gone')).status).toBe(204);
    expect((await api.call('PUT', '/v1/namespaces/gone', {})).status).toBe(201);
    expect((await api.call('GET', '/v1/tasks/old/executions?namespace=gone')).status).toBe(404);
    expect((await api.call('GET', '/v1/tasks/old/versions?namespace=gone')).status).toBe(404);
    expect((await api.call('GET', `/v1/executions/${run.body.id}?namespace=gone`)).status).toBe(404);
    const audit = (await api.call('GET', '/v1/audit?namespace=gone&limit=200')).body.items;
    expect(audit.filter((e: { namespace: string | null }) => e.namespace !== null)).toEqual([]);
    // The key of it alone is revoked (not widened to the whole cluster); the other keeps its other namespace.
    expect((await api.call('GET', '/v1/tasks?namespace=gone', undefined, {}, only.key)).status).toBe(401);
    expect((await api.call('GET', '/v1/me', undefined, {}, both.key)).body.namespaces).toEqual(['kept']);
    expect((await api.call('GET', '/v1/tasks?namespace=gone', undefined, {}, both.key)).status).toBe(404);
  });

  it('lets an apply swap tasks at the quota: the prune makes the room the new ones take', async () => {
    expect((await api.call('PUT', '/v1/namespaces/swap', { quotas: { maxTasks: 2 } })).status).toBe(201);
    const file = (names: string[]) => ({
      managedBy: 'ci',
      prune: true,
      tasks: names.map((n) => ({ ...spec(n), managedBy: 'ci' })),
    });
    expect((await api.call('POST', '/v1/tasks:apply?namespace=swap', file(['a', 'b']))).body.created).toBe(2);
    // A dry run of the swap fits as the swap does, and one past the quota is refused as it would be.
    const dry = await api.call('POST', '/v1/tasks:apply?namespace=swap', { ...file(['a', 'c']), dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, created: 1, deleted: 1 });
    expect(
      (await api.call('POST', '/v1/tasks:apply?namespace=swap', { ...file(['a', 'c', 'd']), dryRun: true })).status,
    ).toBe(429);
    const swapped = await api.call('POST', '/v1/tasks:apply?namespace=swap', file(['a', 'c']));
    expect(swapped.status, JSON.stringify(swapped.body)).toBe(200);
    expect(swapped.body).toMatchObject({ created: 1, deleted: 1 });
    expect((await api.call('POST', '/v1/tasks:apply?namespace=swap', file(['a', 'c', 'd']))).status).toBe(429);
  });

  it('applies and prunes inside one namespace: the same manager elsewhere is left alone', async () => {
    for (const ns of ['apply-a', 'apply-b'])
      expect((await api.call('PUT', `/v1/namespaces/${ns}`, {})).status).toBe(201);
    const file = (names: string[]) => ({
      managedBy: 'ci',
      prune: true,
      tasks: names.map((n) => ({ ...spec(n), managedBy: 'ci' })),
    });
    expect((await api.call('POST', '/v1/tasks:apply?namespace=apply-a', file(['x', 'y']))).body.created).toBe(2);
    const b = await api.call('POST', '/v1/tasks:apply?namespace=apply-b', file(['z']));
    expect(b.body).toMatchObject({ created: 1, deleted: 0, items: [{ name: 'z', action: 'create' }] });
    const diff = await api.call('POST', '/v1/tasks:apply?namespace=apply-a', { ...file(['x']), dryRun: true });
    expect(diff.body.items.map((i: { name: string; action: string }) => `${i.action} ${i.name}`)).toEqual([
      'unchanged x',
      'delete y',
    ]);
    expect((await api.call('POST', '/v1/tasks:apply?namespace=apply-a', file(['x']))).body.deleted).toBe(1);
    const names = async (ns: string) =>
      (await api.call('GET', `/v1/tasks?namespace=${ns}`)).body.items.map((t: { name: string }) => t.name);
    expect(await names('apply-a')).toEqual(['x']);
    expect(await names('apply-b')).toEqual(['z']);
  });
});
