import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CALENDAR_NAME_PATTERN } from '@punctual/contract';
import { describe, expect, it } from 'vitest';
import { substituteEnv } from './env-substitution.js';
import { TaskFileError } from './errors.js';
import { readTaskFile } from './task-file.js';

const dir = mkdtempSync(join(tmpdir(), 'punctual-task-file-'));
const fileWith = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const problems = (path: string, env: Record<string, string> = {}) => {
  try {
    readTaskFile(path, env);
  } catch (error) {
    if (error instanceof TaskFileError) return error.problems;
    throw error;
  }
  throw new Error('expected the file to be refused');
};

describe('readTaskFile', () => {
  it('reads { managedBy, tasks }, lists and single-task documents from one YAML stream', () => {
    const path = fileWith(
      'mixed.yaml',
      [
        'managedBy: repo-x',
        'tasks:',
        '  - { name: a, handler: noop, schedule: { cron: "0 9 * * *" } }',
        '---',
        '- { name: b, handler: noop, schedule: { every: 15m } }',
        '---',
        'name: c',
        'handler: log',
        'schedule: { at: "2035-01-01T00:00:00Z" }',
        '---',
        '',
      ].join('\n'),
    );
    const file = readTaskFile(path, {});
    expect(file.managedBy).toBe('repo-x');
    expect(file.tasks.map((t) => t.name)).toEqual(['a', 'b', 'c']);
    expect(file.origins.map((o) => o.line)).toEqual([3, 5, 7]);
  });

  it('reads JSON', () => {
    const file = readTaskFile(
      fileWith(
        'tasks.json',
        JSON.stringify({ tasks: [{ name: 'j', handler: 'noop', schedule: { cron: '* * * * *' } }] }),
      ),
      {},
    );
    expect(file).toMatchObject({ managedBy: undefined, tasks: [{ name: 'j' }] });
  });

  it('names the file, the line, the task and the field of every problem', () => {
    const path = fileWith(
      'bad.yaml',
      [
        'tasks:',
        '  - name: one',
        '    handler: noop',
        '    colour: red',
        '    schedule: { cron: "0 9 * * *" }',
        '  - name: two',
        '    handler: noop',
        '    schedule: { cron: "0 9 * * *" }',
        '    policy: { overlap: sometimes }',
        '  - name: one',
        '    handler: noop',
        '    schedule: { every: 1h }',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      `${path}:4: task "one": colour: unknown field`,
      `${path}:9: task "two": policy.overlap: Invalid option: expected one of "skip"|"allow"|"buffer_one"|"replace"`,
      `${path}:10: task "one": the name is declared twice (first at line 2)`,
    ]);
  });

  it('says "<field> is required" of a missing field, wherever it is', () => {
    const path = fileWith(
      'missing.yaml',
      [
        'tasks:',
        '  - name: no-handler',
        '    schedule: { cron: "0 9 * * *" }',
        '  - name: no-schedule',
        '    handler: noop',
        '  - name: no-rate-window',
        '    handler: noop',
        '    schedule: { every: 1h }',
        '    policy: { rateLimit: { key: k, limit: 5 } }',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      `${path}:2: task "no-handler": handler is required`,
      `${path}:4: task "no-schedule": schedule is required`,
      `${path}:9: task "no-rate-window": policy.rateLimit.per is required`,
    ]);
    expect(problems(fileWith('no-tasks.yaml', 'managedBy: x\ncalendars: []\ntasks:\n'))).toEqual([
      expect.stringMatching(/no-tasks\.yaml:\d: tasks: Invalid input: expected array, received null$/),
    ]);
  });

  it('suggests the nearest known field for an unknown one, and none when no field is near', () => {
    const path = fileWith(
      'typos.yaml',
      [
        'managedby: repo-x',
        'tasks:',
        '  - name: a',
        '    handlr: noop',
        '    schedule: { cron: "0 9 * * *", timezon: Europe/Berlin }',
        '    policy: { retry: { atempts: 3 } }',
        '    colour: red',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([`${path}:1: managedby: unknown field, did you mean "managedBy"?`]);
    const tasks = fileWith('task-typos.yaml', readFileSync(path, 'utf8').replace('managedby', 'managedBy'));
    expect(problems(tasks)).toEqual([
      // Not also "handler is required": the suggestion says it.
      `${tasks}:5: task "a": schedule.timezon: unknown field, did you mean "timezone"?`,
      `${tasks}:6: task "a": policy.retry.atempts: unknown field, did you mean "attempts"?`,
      `${tasks}:4: task "a": handlr: unknown field, did you mean "handler"?`,
      `${tasks}:7: task "a": colour: unknown field`,
    ]);
    expect(
      problems(fileWith('calendar-typo.yaml', 'tasks: []\ncalendars:\n  - { name: c, dates: [], rrule: [] }\n')),
    ).toEqual([expect.stringMatching(/:3: calendar "c": rrule: unknown field, did you mean "rrules"\?$/)]);
  });

  it('names the line a YAML or JSON mistake is on, in plain words', () => {
    const cases: [string, string, string][] = [
      [
        'indent.yaml',
        'tasks:\n  - name: a\n   handler: noop\n',
        '3: this line is not indented like the lines above it',
      ],
      [
        'deeper.yaml',
        'tasks:\n  - name: a\n      handler: noop\n',
        '3: this line is indented more than the lines above it',
      ],
      [
        'unclosed.yaml',
        'tasks:\n  - name: a\n    schedule: { cron: "0 9 * * *"\n  - name: b\n',
        '3: a "{" opened on this line is never closed with "}"',
      ],
      [
        'list.yaml',
        'tasks:\n  - name: [a\n    handler: noop\n',
        '2: a "[" opened on this line is never closed with "]"',
      ],
      ['quote.yaml', 'tasks:\n  - name: "a\n    handler: noop\n', '2: a " quote opened on this line is never closed'],
      ['tab.yaml', 'tasks:\n\t- name: a\n', '2: a tab indents this line: indent with spaces'],
      [
        'twice.yaml',
        'tasks:\n  - name: a\n    handler: noop\n    name: b\n',
        '4: the key "name" appears twice at the same level',
      ],
      [
        'colon.yaml',
        'tasks:\n  - name: a\n    schedule: cron: 0 9 * * *\n',
        '3: a value holds another "key: value": put it on a line of its own, or quote the value',
      ],
      ['no-colon.yaml', 'tasks:\n  - name: a\n    handler\n', '3: "handler" is not "key: value": is a ":" missing?'],
      [
        'at.yaml',
        'tasks:\n  - name: a\n    handler: @noop\n',
        '3: a value cannot start with "@" unless it is in quotes',
      ],
      ['comma.json', '{\n  "tasks": [\n    { "name": "a",, "handler": "noop" }\n  ]\n}\n', '3: unexpected "," here'],
      [
        'open.json',
        '{\n  "tasks": [\n    { "name": "a" }\n}\n',
        '2: a "[" opened on this line is never closed with "]"',
      ],
    ];
    for (const [name, text, expected] of cases) {
      const path = fileWith(name, text);
      const found = problems(path);
      expect(found, name).toEqual([`${path}:${expected.replace(/^(\d+): /, '$1: not valid YAML or JSON: ')}`]);
      // The parser's own words stay out.
      expect(found[0], name).not.toMatch(/implicit|compact|flow|mapping|scalar|BAD_|MISSING_|column/i);
    }
  });

  it('refuses malformed YAML, a document of another shape and an unreadable file, each in one line', () => {
    expect(problems(fileWith('broken.yaml', 'tasks:\n  - name: a\n   handler: [noop\n'))).toEqual([
      expect.stringMatching(
        /broken\.yaml:3: not valid YAML or JSON: this line is not indented like the lines above it$/,
      ),
    ]);
    expect(problems(fileWith('shape.yaml', 'hello: world\n'))).toEqual([
      expect.stringMatching(/shape\.yaml:1: a document must be/),
    ]);
    expect(problems(fileWith('top.yaml', 'tasks: []\nmanagedby: x\n'))).toEqual([
      `${join(dir, 'top.yaml')}:2: managedby: unknown field, did you mean "managedBy"?`,
    ]);
    expect(problems(join(dir, 'absent.yaml'))).toEqual([`${join(dir, 'absent.yaml')}: cannot read the file (ENOENT)`]);
  });

  it('substitutes ${VAR} in values, remembers where, and refuses a variable that is not set', () => {
    const path = fileWith(
      'env.yaml',
      'tasks:\n  - name: e\n    handler: http\n    payload: { token: "${TOKEN}", literal: "$${TOKEN}" }\n    schedule: { cron: "0 9 * * *" }\n',
    );
    const file = readTaskFile(path, { TOKEN: 's3cret-value' });
    expect(file.tasks[0]!.payload).toEqual({ token: 's3cret-value', literal: '${TOKEN}' });
    expect(file.secretPaths.get('e')).toEqual(['payload.token']);
    expect(file.secretValues).toEqual(['s3cret-value']);
    expect(problems(path)).toEqual([`${path}:4: task "e": payload.token: environment variable TOKEN is not set`]);
  });

  it("refuses a task managed by another than the file's manager, and documents naming two managers", () => {
    expect(
      problems(
        fileWith(
          'mgr.yaml',
          'managedBy: a\ntasks:\n  - { name: x, handler: noop, managedBy: b, schedule: { every: 1h } }\n',
        ),
      ),
    ).toEqual([expect.stringMatching(/mgr\.yaml:3: task "x": managedBy: must be the file's managedBy \("a"\)/)]);
    expect(problems(fileWith('two.yaml', 'managedBy: a\ntasks: []\n---\nmanagedBy: b\ntasks: []\n'))).toEqual([
      expect.stringMatching(/different managers \(a, b\)/),
    ]);
  });
});

describe('readTaskFile: calendars', () => {
  it('reads calendars: beside tasks:, each with its line; without the key the file declares none, with [] it declares an empty list', () => {
    const path = fileWith(
      'calendars.yaml',
      [
        'managedBy: repo-x',
        'calendars:',
        '  - name: us-holidays',
        '    timezone: America/New_York',
        '    dates: ["2026-12-25", "2027-01-01"]',
        '    rrules: [FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4]',
        '  - { name: freeze, dates: ["${FREEZE_DAY}"] }',
        'tasks:',
        '  - { name: a, handler: noop, schedule: { cron: "0 9 * * *", exclude: [us-holidays, freeze] } }',
      ].join('\n'),
    );
    const file = readTaskFile(path, { FREEZE_DAY: '2026-12-24' });
    expect(file.managedBy).toBe('repo-x');
    expect(file.calendars).toEqual([
      {
        name: 'us-holidays',
        timezone: 'America/New_York',
        dates: ['2026-12-25', '2027-01-01'],
        rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4'],
      },
      { name: 'freeze', dates: ['2026-12-24'] },
    ]);
    expect(file.calendarOrigins.map(({ file: f, line, name }) => ({ file: f, line, name }))).toEqual([
      { file: path, line: 3, name: 'us-holidays' },
      { file: path, line: 7, name: 'freeze' },
    ]);
    // And the line of each field, for what the API says about one: a calendar's dates.
    expect(file.calendarOrigins.map((o) => o.lineOf?.(['dates', 0]))).toEqual([5, 7]);
    expect(file.calendarSecretPaths.get('freeze')).toEqual(['dates[0]']);
    expect(file.tasks[0]!.schedule.exclude).toEqual(['us-holidays', 'freeze']);
    expect(file.origins.map((o) => o.line)).toEqual([9]);

    expect(readTaskFile(fileWith('no-calendars.yaml', 'tasks: []\n'), {}).calendars).toBeUndefined();
    expect(readTaskFile(fileWith('empty-calendars.yaml', 'tasks: []\ncalendars: []\n'), {}).calendars).toEqual([]);
    // Across documents: the calendars of every document, and a list of tasks still reads as tasks.
    const split = readTaskFile(
      fileWith(
        'split.yaml',
        'tasks: []\ncalendars: [{ name: one, dates: [] }]\n---\ntasks: []\ncalendars: [{ name: two, dates: [] }]\n---\n- { name: t, handler: noop, schedule: { every: 1h } }\n',
      ),
      {},
    );
    expect([split.calendars?.map((c) => c.name), split.tasks.map((t) => t.name)]).toEqual([['one', 'two'], ['t']]);
  });

  it('refuses a calendar name declared twice, naming both lines', () => {
    const path = fileWith(
      'calendar-twice.yaml',
      [
        'tasks: []',
        'calendars:',
        '  - name: holidays',
        '    dates: ["2026-12-25"]',
        '  - name: other',
        '    dates: []',
        '  - name: holidays',
        '    dates: ["2027-01-01"]',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([`${path}:7: calendar "holidays": the name is declared twice (first at line 3)`]);
    // A calendar may share its name with a task: they are different things.
    expect(
      readTaskFile(
        fileWith(
          'shared-name.yaml',
          'tasks: [{ name: x, handler: noop, schedule: { every: 1h } }]\ncalendars: [{ name: x, dates: [] }]\n',
        ),
        {},
      ).calendars,
    ).toHaveLength(1);
  });

  it('names the file, the line, the calendar and the field of a bad calendar, as for tasks', () => {
    const path = fileWith(
      'bad-calendars.yaml',
      [
        'managedBy: repo-x',
        'tasks: []',
        'calendars:',
        '  - name: us-holidays',
        '    colour: red',
        '    dates: ["2026-12-25", "25/12/2027"]',
        '  - name: Not A Name',
        '    dates: []',
        '  - { name: theirs, dates: [], managedBy: repo-y }',
        '  - { name: no-dates }',
        '  - { name: env, dates: ["${MISSING_DAY}"] }',
      ].join('\n'),
    );
    expect(problems(path)).toEqual([
      `${path}:6: calendar "us-holidays": dates[1]: must be a date such as 2026-12-25`,
      `${path}:5: calendar "us-holidays": colour: unknown field`,
      `${path}:7: calendar "Not A Name": name: must match ${CALENDAR_NAME_PATTERN.source}`,
      `${path}:9: calendar "theirs": managedBy: must be the file's managedBy ("repo-x") or left out`,
      `${path}:10: calendar "no-dates": dates is required`,
      `${path}:11: calendar "env": dates[0]: environment variable MISSING_DAY is not set`,
    ]);
    expect(problems(fileWith('calendars-not-list.yaml', 'tasks: []\ncalendars: { name: x }\n'))).toEqual([
      expect.stringMatching(/calendars-not-list\.yaml:2: calendars: Invalid input: expected array/),
    ]);
  });
});

describe('substituteEnv', () => {
  it('leaves keys and substituted values alone and reports every missing variable by path', () => {
    const out = substituteEnv({ '${K}': ['${A}-${B}', 1, null], n: { deep: '${C}' } }, { A: '${B}', K: 'no' });
    expect(out.value).toEqual({ '${K}': ['${B}-${B}', 1, null], n: { deep: '${C}' } });
    expect(out.missing).toEqual([
      { path: ['${K}', 0], variable: 'B' },
      { path: ['n', 'deep'], variable: 'C' },
    ]);
  });
});
