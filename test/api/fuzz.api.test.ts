import { ErrorEnvelope } from '@punctual/contract';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../support/api.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { type FieldPath, fieldPaths, pathLabel, REPLACEMENTS, withValueAt } from './fuzz-walk.js';

const valid = {
  name: 'fuzz-target',
  handler: 'noop',
  payload: { a: 1 },
  schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
};

const nest = (depth: number): unknown => (depth === 0 ? 1 : { n: nest(depth - 1) });
const setPath = (body: Record<string, unknown>, path: string, value: unknown) => {
  const copy = structuredClone(body) as Record<string, any>;
  const parts = path.split('.');
  let node = copy;
  for (const part of parts.slice(0, -1)) node = node[part] ??= {};
  node[parts.at(-1)!] = value;
  return copy;
};

/** For each field, values that must be refused. None of them may yield a 5xx or change anything. */
const INVALID: Record<string, unknown[]> = {
  name: [
    '',
    'UPPER',
    'a'.repeat(200),
    'with space',
    "x'; DROP TABLE task;--",
    '../etc',
    '🙂',
    'ünïcödé',
    123,
    null,
    {},
    [],
    true,
  ],
  handler: ['', 'Bad Handler', 5, null, 'x'.repeat(100), "h'--", [], '💥'],
  payload: ['string', 5, [], true, nest(40), { big: 'x'.repeat(70 * 1024) }],
  schedule: ['daily', 5, [], null, {}],
  'schedule.cron': [
    '61 * * * *',
    '* * *',
    'CRON_TZ=UTC * * * * *',
    'TZ=Europe/Berlin 0 9 * * *',
    5,
    '',
    'x'.repeat(300),
    "0 9 * * *'; DROP TABLE task;--",
    '* * * * * * * *',
    '@never',
  ],
  'schedule.timezone': ['Mars/Base', '', 5, 'UTC; DROP', '../../etc/passwd', 'Europe/Berlin\u0000'],
  'schedule.every': ['0s', '-5m', 'abc', -1, 1.5, 1e20, '999999999d'],
  'schedule.at': ['yesterday', '2026-13-01T00:00:00Z', 5, '2026-06-01T07:00:00'],
  'schedule.rrule': ['NOT AN RRULE', 5],
  'schedule.jitter': ['-1s', 'x', -5, {}],
  'schedule.startAt': ['not a date', 5, '2026-02-30T00:00:00Z'],
  'schedule.endAt': ['tomorrow', 5, '1970-01-01T00:00:00Z'],
  'schedule.dst': ['shift', 5],
  'schedule.dst.gap': ['sometimes', 1],
  'schedule.unknown': [1],
  policy: ['strict', 5, []],
  'policy.overlap': ['sometimes', 5, ''],
  'policy.misfire': ['never', 0],
  'policy.maxDelay': ['-1h', '1 fortnight', 1e15, -1],
  'policy.retry': [3, 'three'],
  'policy.retry.attempts': [0, -1, 101, 1.5, '3', 1e9],
  'policy.retry.backoff': ['soon', -100],
  'policy.timeout': ['0.5.5s', {}, [], '30 d'],
  'notify.url': ['ftp://x', 'javascript:alert(1)', 5, 'x'.repeat(3000)],
  'notify.on': [['sometimes'], 'dead', [1], ['dead', 'dead', 'dead', 'dead']],
  paused: ['yes', 1],
  colour: ['red'],
  secretFields: ['token', [1], Array(200).fill('x')],
  description: [5, 'x'.repeat(5000)],
};

/** A task body with every field set (one per schedule kind, as a task holds exactly one). */
const common = {
  description: 'complete',
  handler: 'noop',
  payload: { a: 1 },
  secretFields: ['a'],
  policy: {
    overlap: 'skip',
    misfire: 'run_once',
    maxDelay: '1h',
    retry: { attempts: 3, backoff: '30s', maxBackoff: '1h' },
    timeout: '5m',
  },
  notify: { url: 'https://example.com/hook', on: ['dead'] },
  paused: false,
  labels: { team: 'billing' },
  managedBy: 'fuzz-apply',
};
const bounds = {
  timezone: 'Europe/Berlin',
  startAt: '2030-01-01T00:00:00Z',
  endAt: '2040-01-01T00:00:00Z',
  jitter: '1s',
};
const dst = { gap: 'shift', overlap: 'first' };
const COMPLETE_TASKS = {
  cron: { ...common, schedule: { cron: '0 9 * * *', ...bounds, dst } },
  rrule: {
    ...common,
    schedule: { rrule: 'DTSTART;TZID=Europe/Berlin:20300107T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO', ...bounds, dst },
  },
  at: { ...common, schedule: { at: '2031-06-01T07:00:00', timezone: 'Europe/Berlin', disambiguation: 'earlier' } },
  every: { ...common, schedule: { every: '15m', ...bounds } },
};

/**
 * Replacements a field legitimately takes (they are not sent: a valid request would change
 * something). Durations also take whole milliseconds; free text takes any short string.
 */
const TEXT = ['empty', 'NaN', 'Infinity', '-0', '1e999'];
const ACCEPTED: Record<string, string[]> = {
  description: ['null', ...TEXT],
  payload: ['object'],
  'secretFields[0]': ['NaN', 'Infinity', '-0', '1e999'],
  'schedule.startAt': ['null'],
  'schedule.endAt': ['null'],
  'schedule.jitter': ['number'],
  'schedule.every': ['number'],
  'policy.maxDelay': ['number'],
  'policy.retry.backoff': ['number'],
  'policy.retry.maxBackoff': ['number'],
  'policy.timeout': ['number'],
  'notify.url': ['null'],
  'labels.team': TEXT,
  managedBy: ['null', 'NaN', 'Infinity', '1e999'],
};
const inBatch = Object.fromEntries(
  Object.entries({ ...ACCEPTED, name: ['1e999'] }).map(([field, labels]) => [`tasks[0].${field}`, labels]),
);
const ACCEPTED_BY_ROUTE: Record<string, Record<string, string[]>> = {
  'POST /v1/tasks': { ...ACCEPTED, name: ['1e999'] },
  'PUT /v1/tasks/existing': ACCEPTED,
  'PATCH /v1/tasks/existing': ACCEPTED,
  'POST /v1/tasks:batch': inBatch,
  // An apply's tasks must carry its managedBy (or none): any other value there is refused.
  'POST /v1/tasks:apply': Object.fromEntries(
    Object.entries(inBatch).filter(([field]) => field !== 'tasks[0].managedBy'),
  ),
  'POST /v1/tasks/existing/trigger': { payload: ['object'] },
  'POST /v1/schedules/preview': Object.fromEntries(
    Object.entries(ACCEPTED).filter(([field]) => field.startsWith('schedule.')),
  ),
  'POST /v1/api-keys': { name: ['NaN', 'Infinity', '-0', '1e999'] },
};

/** A complete body for every route that takes one. */
function completeBodies(): [string, string, object][] {
  const routes: [string, string, object][] = [];
  for (const [kind, body] of Object.entries(COMPLETE_TASKS)) {
    routes.push(
      ['POST', '/v1/tasks', { name: `walk-${kind}`, ...body }],
      ['PUT', '/v1/tasks/existing', { name: 'existing', ...body }],
      ['PATCH', '/v1/tasks/existing', body],
    );
  }
  routes.push(
    ['POST', '/v1/tasks:batch', { tasks: [{ name: 'walk-batch', ...COMPLETE_TASKS.cron }] }],
    [
      'POST',
      '/v1/tasks:apply',
      { managedBy: 'fuzz-apply', tasks: [{ name: 'walk-apply', ...COMPLETE_TASKS.cron }], prune: true, dryRun: true },
    ],
    ['POST', '/v1/tasks/existing/trigger', { payload: { b: 2 } }],
    ['POST', '/v1/tasks/existing/backfill', { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', maxRuns: 10 }],
    ['POST', '/v1/tasks/existing/resume', { catchUp: 'latest' }],
    [
      'POST',
      '/v1/schedules/preview',
      { schedule: COMPLETE_TASKS.cron.schedule, from: '2026-03-28T00:00:00Z', count: 5 },
    ],
    ['POST', '/v1/schedules/preview', { schedule: COMPLETE_TASKS.at.schedule, from: '2026-03-28T00:00:00Z', count: 5 }],
    ['POST', '/v1/api-keys', { name: 'fuzz-key', role: 'viewer' }],
  );
  return routes;
}

/** Every field of every body, each replaced by each value of the wrong kind. */
function walkedCases(): [string, string, unknown][] {
  const cases: [string, string, unknown][] = [];
  const seen = new Set<string>();
  for (const [method, path, body] of completeBodies()) {
    const accepted = ACCEPTED_BY_ROUTE[`${method} ${path}`] ?? {};
    for (const field of fieldPaths(body)) {
      for (const [label, value] of REPLACEMENTS) {
        if (accepted[pathLabel(field)]?.includes(label)) continue;
        const mutated = withValueAt(body, field, value);
        const key = `${method} ${path} ${JSON.stringify(mutated)}`;
        if (!seen.has(key)) cases.push([method, path, mutated]);
        seen.add(key);
      }
    }
  }
  return cases;
}

describe('fuzz: malformed requests', () => {
  let sandbox: Sandbox;
  let api: Awaited<ReturnType<typeof startApi>>;
  let db: pg.Client;

  beforeAll(async () => {
    sandbox = await createSandbox();
    api = await startApi(sandbox);
    db = new pg.Client({ connectionString: sandbox.databaseUrl });
    await db.connect();
    expect((await api.call('POST', '/v1/tasks', { ...valid, name: 'existing' })).status).toBe(201);
  });
  afterAll(async () => {
    await db?.end();
    await api?.close();
    await sandbox?.dispose();
  });

  const snapshot = async () =>
    (
      await db.query(`SELECT (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t.id), '')) FROM task t) AS tasks,
                            (SELECT count(*) FROM task_execution) AS executions, (SELECT count(*) FROM audit_log) AS audit`)
    ).rows[0];

  it("answers every one with a 4xx in the error format, its code one of the contract's, never a 5xx, and changes nothing", async () => {
    const before = await snapshot();
    const cases: [string, string, unknown][] = [];
    for (const [path, values] of Object.entries(INVALID)) {
      for (const value of values) {
        cases.push(['POST', '/v1/tasks', setPath(valid, path, value)]);
        if (path !== 'name') cases.push(['PUT', '/v1/tasks/existing', setPath(valid, path, value)]);
        if (path !== 'name' && path !== 'schedule')
          cases.push(['PATCH', '/v1/tasks/existing', setPath({}, path, value)]);
      }
    }
    for (const body of [
      'null',
      '[]',
      '"string"',
      '{',
      '{"name":',
      'x'.repeat(300 * 1024),
      `${'{"n":'.repeat(5000)}1${'}'.repeat(5000)}`,
      `{"name":"deep","handler":"noop","schedule":{"cron":"* * * * *"},"payload":${'{"n":'.repeat(5000)}1${'}'.repeat(5000)}}`,
    ])
      cases.push(['POST', '/v1/tasks', body]);
    // Cursors that decode, but to something this API never wrote.
    for (const cursor of [
      'e30',
      Buffer.from('{"s":"yesterday","id":"x"}').toString('base64url'),
      Buffer.from('{"s":"2026-01-01T00:00:00Z","id":"x"}').toString('base64url'),
      Buffer.from('{"name":5}').toString('base64url'),
      Buffer.from('[1]').toString('base64url'),
    ]) {
      cases.push(
        ['GET', `/v1/tasks?cursor=${cursor}`, undefined],
        ['GET', `/v1/executions?cursor=${cursor}`, undefined],
        ['GET', `/v1/audit?cursor=${cursor}`, undefined],
        ['GET', `/v1/namespaces?cursor=${cursor}`, undefined],
      );
    }
    for (const query of [
      'limit=-1',
      'limit=1e9',
      'limit=abc',
      'cursor=!!!',
      'cursor=' + 'A'.repeat(600),
      'status=weird',
      'status[]=active',
      'q=' + 'x'.repeat(500),
    ]) {
      cases.push(['GET', `/v1/tasks?${query}`, undefined]);
      cases.push(['GET', `/v1/executions?${query}`, undefined]);
    }
    for (const query of ['from=yesterday', 'to=2026-99-01', 'task=' + 'x'.repeat(300)])
      cases.push(['GET', `/v1/executions?${query}`, undefined]);
    for (const body of [
      {},
      { from: 'x', to: 'y' },
      { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' },
      { from: '2026-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' },
      { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', maxRuns: 1e6 },
    ]) {
      cases.push(['POST', '/v1/tasks/existing/backfill', body]);
    }
    for (const body of [{ catchUp: 'maybe' }, { catchUp: 5 }]) cases.push(['POST', '/v1/tasks/existing/resume', body]);
    for (const body of [{ payload: 'x' }, { payload: 5 }, { other: 1 }])
      cases.push(['POST', '/v1/tasks/existing/trigger', body]);
    for (const body of [
      {},
      { schedule: { cron: 'nope' } },
      { schedule: { cron: '* * * * *' }, count: 1001 },
      { schedule: { cron: '* * * * *' }, count: 0 },
      { schedule: { every: '1s' }, from: 'then' },
    ]) {
      cases.push(['POST', '/v1/schedules/preview', body]);
    }
    cases.push(
      ['PATCH', '/v1/tasks/existing', {}],
      ['GET', '/v1/executions/not-a-uuid', undefined],
      ['POST', '/v1/api-keys', { name: 'x', role: 'root' }],
    );
    // The empty PATCH and the GET are fine requests; strip them from the "must be refused" set.
    const mustRefuse = cases.filter(([m, , b]) => !(m === 'PATCH' && JSON.stringify(b) === '{}'));

    const statuses = new Map<number, number>();
    const failures: string[] = [];
    for (const [method, path, body] of mustRefuse) {
      const res = await api.call(method, path, body);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const ok = res.status >= 400 && res.status < 500 && ErrorEnvelope.safeParse(res.body).success;
      if (!ok || /\n\s+at |node_modules|\.ts:\d+/.test(JSON.stringify(res.body)))
        failures.push(
          `${method} ${path} ${JSON.stringify(body)?.slice(0, 120)} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`,
        );
    }
    console.log(`fuzz: ${mustRefuse.length} malformed requests → ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failures).toEqual([]);
    expect(mustRefuse.length).toBeGreaterThanOrEqual(200);
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a wrong value in every field of every body with 400 or 422 and the error envelope, and changes nothing', async () => {
    for (const [kind, body] of Object.entries(COMPLETE_TASKS)) {
      const res = await api.call('POST', '/v1/tasks', { name: `complete-${kind}`, ...body });
      expect(res.status, `the complete ${kind} body is valid: ${JSON.stringify(res.body)}`).toBe(201);
    }
    const before = await snapshot();
    const cases = walkedCases();
    const failures: string[] = [];
    for (const [method, path, body] of cases) {
      const res = await api.call(method, path, body);
      const ok = (res.status === 400 || res.status === 422) && ErrorEnvelope.safeParse(res.body).success;
      if (!ok || /\n\s+at |node_modules|\.ts:\d+/.test(JSON.stringify(res.body))) {
        failures.push(
          `${method} ${path} ${JSON.stringify(body)?.slice(0, 160)} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 160)}`,
        );
      }
    }
    console.log(`fuzz walk: ${cases.length} requests, ${failures.length} not refused with 400/422`);
    expect(failures).toEqual([]);
    expect(cases.length).toBeGreaterThan(1000);
    expect(await snapshot()).toEqual(before);
  }, 300_000);

  it(
    'refuses a NUL character or half a character in any string of any request — a body value or key, a ' +
      'payload, a query, a path — with 422 invalid_text naming the field, and changes nothing',
    async () => {
      const before = await snapshot();
      const cases: [method: string, path: string, body: unknown, field: string][] = [];
      const stringAt = (body: unknown, at: FieldPath) => at.reduce<any>((node, key) => node?.[key], body);
      for (const [method, path, body] of completeBodies()) {
        for (const field of fieldPaths(body)) {
          const value = stringAt(body, field);
          if (typeof value !== 'string') continue;
          for (const bad of ['\u0000', '\ud800'])
            cases.push([method, path, withValueAt(body, field, `${value}${bad}`), pathLabel(field)]);
        }
        // Inside a payload, in a label's key, in a concurrency key: wherever a string is stored.
        const prefix = 'tasks' in body ? 'tasks[0].' : '';
        const task = (b: object) => ('tasks' in b ? (b.tasks as object[])[0]! : b) as Record<string, unknown>;
        if ('payload' in task(body)) {
          cases.push([
            method,
            path,
            withValueAt(body, [...(prefix ? ['tasks', 0] : []), 'payload'], { note: 'a\u0000b' }),
            `${prefix}payload.note`,
          ]);
          cases.push([
            method,
            path,
            withValueAt(body, [...(prefix ? ['tasks', 0] : []), 'payload'], { list: ['ok', '\udc00'] }),
            `${prefix}payload.list[1]`,
          ]);
        }
        if ('labels' in task(body))
          cases.push([
            method,
            path,
            withValueAt(body, [...(prefix ? ['tasks', 0] : []), 'labels'], { 'te\u0000am': 'x' }),
            `${prefix}labels.te\u0000am`,
          ]);
        if ('policy' in task(body)) {
          cases.push([
            method,
            path,
            withValueAt(body, [...(prefix ? ['tasks', 0] : []), 'policy', 'concurrency'], { key: 'k\u0000', limit: 1 }),
            `${prefix}policy.concurrency.key`,
          ]);
        }
      }
      cases.push(['GET', `/v1/tasks?q=${encodeURIComponent('a\u0000')}`, undefined, 'q']);
      cases.push(['GET', `/v1/tasks/${encodeURIComponent('a\u0000')}`, undefined, 'name']);
      cases.push(['PUT', `/v1/calendars/holidays`, { dates: ['2030-01-01'], description: 'x\u0000' }, 'description']);
      const failures: string[] = [];
      for (const [method, path, body, field] of cases) {
        const res = await api.call(method, path, body);
        const ok =
          res.status === 422 &&
          res.body?.error?.code === 'invalid_text' &&
          res.body.error.details?.[0]?.field === field;
        if (!ok) failures.push(`${method} ${path} ${field} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`);
      }
      console.log(`unstorable text: ${cases.length} requests, ${failures.length} not refused as invalid_text`);
      expect(failures).toEqual([]);
      expect(cases.length).toBeGreaterThan(150);
      expect(await snapshot()).toEqual(before);
    },
  );
});
