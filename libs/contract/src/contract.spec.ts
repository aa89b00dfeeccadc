import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as contract from './index.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = join(dir, entry);
    if (entry === 'generated' || entry === 'node_modules') return [];
    if (statSync(join(ROOT, path)).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs)$/.test(entry) ? [path] : [];
  });
}

const OUTSIDE = [...sources('apps'), ...sources('libs'), ...sources('bench'), ...sources('scripts')].filter(
  // Tests may spell values out: they check them.
  (f) => !f.startsWith('libs/contract/') && !/\.spec(-helper)?\.ts$/.test(f),
);
/**
 * libs/time, the pure schedule math, predates the contract and keeps its own DST and disambiguation
 * lists and UTC fallback until it takes them from here; nothing else may.
 */
const EXEMPT: Record<string, string[]> = {
  'libs/time/src/local-time.ts': ['DISAMBIGUATIONS'],
  'libs/time/src/dst-policy.ts': ['DST_GAPS', 'DST_OVERLAPS'],
  'libs/time/src/preview.ts': ['default timezone'],
};

function occurrences(needle: string, name: string): string[] {
  return OUTSIDE.filter(
    (file) => !EXEMPT[file]?.includes(name) && readFileSync(join(ROOT, file), 'utf8').includes(needle),
  ).map((f) => relative('.', f));
}

describe('the contract is the one place', () => {
  it.each([
    'TASK_NAME_PATTERN',
    'HANDLER_NAME_PATTERN',
    'LABEL_KEY_PATTERN',
    'LABEL_VALUE_PATTERN',
    'MANAGED_BY_PATTERN',
    'API_KEY_NAME_PATTERN',
    'DURATION_PATTERN',
  ] as const)('of %s: its regex is written nowhere else', (name) => {
    expect(occurrences((contract[name] as RegExp).source, name)).toEqual([]);
  });

  it.each([
    'SCHEDULE_KINDS',
    'TASK_STATUSES',
    'OVERLAP_POLICIES',
    'MISFIRE_POLICIES',
    'DST_GAPS',
    'DST_OVERLAPS',
    'DISAMBIGUATIONS',
    'NOTIFY_EVENTS',
    'EXECUTION_STATUSES',
    'SKIP_REASONS',
    'TRIGGERS',
    'ROLES',
    'CATCH_UPS',
    'ERROR_CODES',
  ] as const)('of %s: the list of values is written nowhere else', (name) => {
    const list = contract[name] as readonly string[];
    expect(occurrences(list.map((v) => `'${v}'`).join(', '), name)).toEqual([]);
  });

  it('of the task defaults and limits: no fallback value and no limit constant is written elsewhere', () => {
    const d = contract.TASK_DEFAULTS;
    for (const fallback of [
      `?? '${d.timezone}'`,
      `?? '${d.overlap}'`,
      `?? '${d.misfire}'`,
      `?? ['${d.notifyOn[0]}']`,
      `?? ${d.attempts}`,
    ]) {
      expect(
        occurrences(fallback, fallback === `?? '${d.timezone}'` ? 'default timezone' : fallback),
        fallback,
      ).toEqual([]);
    }
    for (const limit of [
      'PREVIEW_MAX',
      'BACKFILL_MAX',
      'BATCH_MAX',
      'PAGE_LIMIT_MAX',
      'PAYLOAD_MAX_BYTES',
      'RESULT_MAX_BYTES',
      'LABELS_MAX',
      'UPCOMING_COUNT',
    ]) {
      expect(
        OUTSIDE.filter((f) => new RegExp(`\\b${limit}\\s*=`).test(readFileSync(join(ROOT, f), 'utf8'))),
        limit,
      ).toEqual([]);
    }
  });

  it('imports nothing but zod, so a browser and the client can load it', () => {
    for (const file of [...sources('libs/contract'), ...sources('libs/client')].filter(
      (f) => !f.endsWith('.spec.ts'),
    )) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      const imports = [...text.matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
      expect(
        imports.filter((i) => !i.startsWith('./') && i !== 'zod' && i !== '@punctual/contract'),
        file,
      ).toEqual([]);
      expect(text, file).not.toMatch(/\bprocess\.|\bBuffer\b|require\(/);
    }
  });
});

describe('request bodies', () => {
  it('may be left out exactly where the schema accepts none: pause, resume, trigger and a patch', () => {
    const optional = Object.entries(contract.routes)
      .filter(([, route]) => contract.isBodyOptional(route))
      .map(([id]) => id);
    expect(optional.sort()).toEqual(['patchTask', 'pauseTask', 'putNamespace', 'resumeTask', 'triggerTask']);
  });
});

describe('error codes', () => {
  it('are the envelope code, and nothing else is', () => {
    expect(contract.ERROR_CODES.every(contract.isErrorCode)).toBe(true);
    expect(['http_415', 'Not_Found', '', undefined, 404].some(contract.isErrorCode)).toBe(false);
    const envelope = (code: unknown) =>
      contract.ErrorEnvelope.safeParse({ error: { code, message: 'm', details: [] } }).success;
    expect([envelope('not_found'), envelope('http_415')]).toEqual([true, false]);
  });
});

describe('execution lists', () => {
  it('leave the planned executions out unless `planned` or a status filter on a planned state asks for them', () => {
    expect(
      [{}, { status: 'dead' as const }, { planned: false }, { status: 'scheduled' as const, planned: false }].map(
        contract.listsPlanned,
      ),
    ).toEqual([false, false, false, false]);
    expect(
      [
        { planned: true },
        { status: 'scheduled' as const },
        { status: 'queued' as const },
        { status: 'succeeded' as const, planned: true },
      ].map(contract.listsPlanned),
    ).toEqual([true, true, true, true]);
  });

  it('read `planned` from a query string or a boolean, and nothing else', () => {
    const parse = (planned: unknown) => contract.TaskExecutionsQuery.safeParse({ planned });
    expect(['true', 'false', true, false, undefined].map((v) => parse(v).data?.planned)).toEqual([
      true,
      false,
      true,
      false,
      undefined,
    ]);
    expect(['yes', '1', '', 1].map((v) => parse(v).error?.issues[0]?.code)).toEqual([
      'invalid_type',
      'invalid_type',
      'invalid_type',
      'invalid_type',
    ]);
  });
});

describe('schedules', () => {
  const task = (schedule: unknown) => ({ name: 'x', handler: 'noop', schedule });
  const issues = (result: {
    error?: { issues: { path: PropertyKey[]; message: string; code: string; params?: unknown }[] };
  }) =>
    result.error?.issues.map((i) => ({
      path: i.path.join('.'),
      message: i.message,
      ...(i.code === 'custom' && { params: i.params }),
    }));

  it('hold exactly one kind, refused otherwise with the invalid_schedule code (for tasks, batches, applies and previews)', () => {
    const oneKind = {
      path: 'schedule',
      message: 'must hold exactly one of cron, rrule, at, every',
      params: { code: 'invalid_schedule' },
    };
    expect(issues(contract.TaskSpec.safeParse(task({ cron: '* * * * *', every: '1m' })))).toEqual([oneKind]);
    expect(issues(contract.TaskSpec.safeParse(task({ timezone: 'UTC' })))).toEqual([oneKind]);
    expect(issues(contract.TaskBatchRequest.safeParse({ tasks: [task({})] }))).toEqual([
      { ...oneKind, path: 'tasks.0.schedule' },
    ]);
    expect(
      issues(
        contract.PreviewRequest.safeParse({ schedule: { at: '2030-01-01T00:00:00Z', rrule: 'RRULE:FREQ=DAILY' } }),
      ),
    ).toEqual([oneKind]);
    expect(contract.TaskSpec.safeParse(task({ every: '15m', timezone: 'Europe/Berlin' })).success).toBe(true);
  });

  it("in a patch name at most one kind, which replaces the task's", () => {
    expect(contract.TaskPatch.safeParse({ schedule: { timezone: 'Europe/Berlin' } }).success).toBe(true);
    expect(contract.TaskPatch.safeParse({ schedule: { every: '1h' } }).success).toBe(true);
    expect(
      issues(contract.TaskPatch.safeParse({ schedule: { cron: '* * * * *', at: '2030-01-01T00:00:00Z' } })),
    ).toEqual([
      {
        path: 'schedule',
        message: "must name at most one of cron, rrule, at, every: the kind it names replaces the task's",
        params: { code: 'invalid_schedule' },
      },
    ]);
  });

  it('refuse a field of the wrong type by its path, before anything reads it', () => {
    for (const [field, value] of [
      ['cron', null],
      ['cron', 5],
      ['rrule', {}],
      ['at', []],
      ['timezone', 5],
    ] as const) {
      const paths = contract.TaskSpec.safeParse(task({ cron: '* * * * *', [field]: value })).error?.issues.map((i) =>
        i.path.join('.'),
      );
      expect(paths, `${field} = ${JSON.stringify(value)}`).toContain(`schedule.${field}`);
    }
  });

  it('bound themselves with instants that have an offset and a real calendar date', () => {
    for (const instant of ['2026-02-30T00:00:00Z', '2026-06-01T07:00:00', '2026-06-01T24:00:00Z', 'tomorrow']) {
      expect(contract.TaskSpec.safeParse(task({ cron: '* * * * *', startAt: instant })).success, instant).toBe(false);
    }
    expect(
      contract.TaskSpec.safeParse(task({ cron: '* * * * *', startAt: '2026-06-01T09:00:00+02:00', endAt: null }))
        .success,
    ).toBe(true);
  });

  it('reject a task name outside the pattern', () => {
    for (const name of ['UPPER', '-dash', '', 'a'.repeat(129), 'with space'])
      expect(contract.TaskSpec.safeParse({ ...task({ every: '1m' }), name }).success, name).toBe(false);
  });
});

describe('durations', () => {
  it('reads strings with a unit and whole milliseconds, and nothing else', () => {
    expect(['250ms', '30s', '5m', '1h', '7d', '1.5s', 1500].map(contract.durationMs)).toEqual([
      250, 30_000, 300_000, 3_600_000, 604_800_000, 1500, 1500,
    ]);
    expect(['5 minutes', '', '-1s', 'NaN', '1e999', -1, 1.5, null].map(contract.durationMs).every(Number.isNaN)).toBe(
      true,
    );
  });

  it('writes milliseconds back as the shortest exact string, which reads as the same milliseconds', () => {
    const ms = [604_800_000, 3_600_000, 90_000, 1500, 250, 0];
    expect(ms.map(contract.formatDuration)).toEqual(['7d', '1h', '90s', '1500ms', '250ms', '0ms']);
    expect(ms.map(contract.formatDuration).map(contract.durationMs)).toEqual(ms);
  });
});
