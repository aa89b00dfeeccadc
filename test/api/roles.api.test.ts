import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../support/api.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';

type Role = 'viewer' | 'operator' | 'admin';
const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };
const MISSING = '00000000-0000-4000-8000-000000000000';

/** Every route of DESIGN §7 with the least role it needs. Bodies are minimal; 4xx past auth is fine. */
const ROUTES: [string, string, Role, unknown?][] = [
  ['GET', '/v1/tasks', 'viewer'],
  ['POST', '/v1/tasks', 'admin', {}],
  ['POST', '/v1/tasks:batch', 'admin', { tasks: [] }],
  ['POST', '/v1/tasks:apply', 'admin', { tasks: [], dryRun: true }],
  ['GET', '/v1/cluster', 'viewer'],
  ['PUT', '/v1/tasks/role-x', 'admin', {}],
  ['PATCH', '/v1/tasks/role-x', 'admin', {}],
  ['GET', '/v1/tasks/role-x', 'viewer'],
  ['DELETE', '/v1/tasks/role-missing', 'admin'],
  ['POST', '/v1/tasks/role-missing/pause', 'operator'],
  ['POST', '/v1/tasks/role-missing/resume', 'operator', {}],
  ['POST', '/v1/tasks/role-missing/trigger', 'operator', {}],
  ['POST', '/v1/tasks/role-missing/backfill', 'operator', {}],
  ['GET', '/v1/tasks/role-x/executions', 'viewer'],
  ['GET', '/v1/executions', 'viewer'],
  ['GET', `/v1/executions/${MISSING}`, 'viewer'],
  ['POST', `/v1/executions/${MISSING}/retry`, 'operator'],
  ['POST', `/v1/executions/${MISSING}/cancel`, 'operator'],
  ['POST', '/v1/schedules/preview', 'viewer', { schedule: { cron: '* * * * *' }, count: 1 }],
  ['GET', '/v1/calendars', 'viewer'],
  ['GET', '/v1/calendars/role-missing', 'viewer'],
  ['PUT', '/v1/calendars/role-cal', 'admin', { dates: ['2026-12-25'] }],
  ['DELETE', '/v1/calendars/role-missing', 'admin'],
  ['GET', '/v1/handlers', 'viewer'],
  ['GET', '/v1/me', 'viewer'],
  ['GET', '/v1/api-keys', 'admin'],
  ['POST', '/v1/api-keys', 'admin', {}],
  ['DELETE', `/v1/api-keys/${MISSING}`, 'admin'],
  ['GET', '/v1/namespaces', 'viewer'],
  ['GET', '/v1/namespaces/default', 'viewer'],
  ['PUT', '/v1/namespaces/role-ns', 'admin', {}],
  ['DELETE', '/v1/namespaces/role-missing', 'admin'],
  ['GET', '/v1/audit', 'admin'],
  ['GET', '/metrics', 'viewer'],
  ['GET', '/admin/queues/api/queues', 'admin'],
];

describe('roles × routes', () => {
  let sandbox: Sandbox;
  let api: Awaited<ReturnType<typeof startApi>>;
  const keys: Record<Role, string> = { viewer: '', operator: '', admin: '' };

  beforeAll(async () => {
    sandbox = await createSandbox();
    api = await startApi(sandbox, { METRICS_TOKEN: 'metrics-token-0123456789' });
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      const res = await api.call('POST', '/v1/api-keys', { name: `${role}-key`, role });
      expect(res.status).toBe(201);
      keys[role] = res.body.key;
    }
    expect(
      (await api.call('POST', '/v1/tasks', { name: 'role-x', handler: 'noop', schedule: { cron: '0 0 * * *' } }))
        .status,
    ).toBe(201);
  });
  afterAll(async () => {
    await api?.close();
    await sandbox?.dispose();
  });

  it.each(ROUTES)('%s %s needs %s', async (method, path, least, body) => {
    const table: Record<string, number> = {};
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      const res = await api.call(method, path, body, {}, keys[role]);
      table[role] = res.status;
      if (RANK[role] < RANK[least]) expect(res.status, `${role} on ${method} ${path}`).toBe(403);
      else expect([401, 403], `${role} on ${method} ${path}`).not.toContain(res.status);
      expect(res.status).toBeLessThan(500);
    }
    const anonymous = await api.call(method, path, body, {}, '');
    expect(anonymous.status).toBe(401);
  });

  it('stores keys hashed: the clear key is shown once and appears nowhere in the database', async () => {
    const listed = await api.call('GET', '/v1/api-keys');
    expect(JSON.stringify(listed.body)).not.toContain(keys.viewer);
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: sandbox.databaseUrl });
    await client.connect();
    const { rows } = await client.query('SELECT prefix, hash FROM api_key');
    await client.end();
    // The secret is everything after `pk_<id>_` (base64url, so it may itself contain `_`).
    expect(JSON.stringify(rows)).not.toContain(keys.viewer.split('_').slice(2).join('_'));
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.hash))).toBe(true);
  });

  it('a revoked key stops working; /metrics also takes METRICS_TOKEN', async () => {
    const created = await api.call('POST', '/v1/api-keys', { name: 'short-lived', role: 'viewer' });
    expect((await api.call('GET', '/v1/tasks', undefined, {}, created.body.key)).status).toBe(200);
    expect((await api.call('DELETE', `/v1/api-keys/${created.body.id}`)).status).toBe(204);
    expect((await api.call('GET', '/v1/tasks', undefined, {}, created.body.key)).status).toBe(401);
    const metrics = await api.call('GET', '/metrics', undefined, {}, 'metrics-token-0123456789');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('punctual_');
    expect((await api.call('GET', '/v1/tasks', undefined, {}, 'metrics-token-0123456789')).status).toBe(401);
  });

  it('Bull Board: pages, assets and API need an admin; a browser signs in with a session cookie', async () => {
    for (const path of ['/admin/queues', '/admin/queues/static/js/main.js', '/admin/queues/api/queues']) {
      const res = await fetch(`${api.base}${path}`, { redirect: 'manual' });
      expect([302, 401], path).toContain(res.status);
    }
    const viewer = await fetch(`${api.base}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${keys.viewer}` },
    });
    expect(viewer.status).toBe(403);
    const wrong = await fetch(`${api.base}/admin/login`, {
      method: 'POST',
      body: new URLSearchParams({ key: 'pk_nottherealkey_xxxxxxxxxxxxxxxxxxxxxx' }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    // An operator may sign in (for /docs) but Bull Board stays admin-only.
    const operator = await fetch(`${api.base}/admin/login`, {
      method: 'POST',
      body: new URLSearchParams({ key: keys.operator }),
      redirect: 'manual',
    });
    const operatorCookie = operator.headers.get('set-cookie')!.split(';')[0]!;
    expect((await fetch(`${api.base}/admin/queues/api/queues`, { headers: { cookie: operatorCookie } })).status).toBe(
      403,
    );
    expect((await fetch(`${api.base}/docs-json`, { headers: { cookie: operatorCookie } })).status).toBe(200);
    expect((await fetch(`${api.base}/docs-json`)).status).toBe(401);
    const login = await fetch(`${api.base}/admin/login`, {
      method: 'POST',
      body: new URLSearchParams({ key: keys.admin }),
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/i);
    const queues = await fetch(`${api.base}/admin/queues/api/queues`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(queues.status).toBe(200);
    expect(JSON.stringify(await queues.json())).toContain('executions');
  });

  it('throttles repeated failed authentication from one client', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i += 1)
      statuses.push(
        (await api.call('GET', '/v1/tasks', undefined, {}, `pk_wrongwrong_${i}xxxxxxxxxxxxxxxxxxxx`)).status,
      );
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.at(-1)).toBe(429);
    // A valid key from the same client is throttled too until the window passes.
    expect((await api.call('GET', '/v1/tasks', undefined, {}, keys.admin)).status).toBe(429);
  });
});
