import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PunctualClient } from '@punctual/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { type CliResult, ensureCliBuilt, runCli } from './run-cli.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/tasks.yaml', import.meta.url));
const SECRETS = {
  first: 'tok-first-0123456789',
  second: 'tok-second-9876543210',
  syncFirst: 'sync-key-aaaa1111',
  syncSecond: 'sync-key-bbbb2222',
};

/** The tasks file of these tests: a secret field and an unmarked value from the environment. */
const tasksYaml = (options: { cron?: string; once?: boolean; extra?: string } = {}) => `
managedBy: cli-test
tasks:
  - name: cli-report
    handler: http
    payload:
      url: https://hooks.example.com/report
      headers: { authorization: "Bearer \${REPORT_TOKEN}" }
    secretFields: [headers.authorization]
    schedule: { cron: "${options.cron ?? '0 9 * * 1-5'}", timezone: Europe/Berlin }
  - name: cli-sync
    handler: noop
    payload: { apiKey: "\${SYNC_KEY}" }
    schedule: { every: 15m }
${
  options.once === false
    ? ''
    : `  - name: cli-once
    handler: log
    schedule: { at: "2035-06-01T09:00:00", timezone: America/New_York }
`
}${options.extra ?? ''}`;

/** A loopback port nothing listens on: one the system just handed out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('punctual diff and apply', () => {
  const ctx = useApiSandbox();
  const dir = mkdtempSync(join(tmpdir(), 'punctual-cli-'));
  const outputs: CliResult[] = [];
  /** The signing secrets of the tasks apply created: shown once by the API, never by the CLI. */
  const taskSecrets: string[] = [];
  const admin = () => new PunctualClient({ baseUrl: ctx.api.base, apiKey: ctx.api.config.adminApiKey });
  const env = (extra: Record<string, string> = {}) => ({
    PUNCTUAL_URL: ctx.api.base,
    PUNCTUAL_API_KEY: ctx.api.config.adminApiKey,
    REPORT_TOKEN: SECRETS.first,
    SYNC_KEY: SECRETS.syncFirst,
    ...extra,
  });
  const cli = async (args: string[], extra: Record<string, string> = {}) => {
    const result = await runCli(args, env(extra));
    outputs.push(result);
    return result;
  };
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const managed = async (by = 'cli-test') =>
    (await admin().tasks.list({ managedBy: by }).all()).map((t) => `${t.name}@${t.version}`);
  const lines = (text: string) => text.trim().split('\n');

  beforeAll(() => ensureCliBuilt(), 300_000);

  it('diff shows what apply would create and exits 3; apply --dry-run changes nothing', async () => {
    const path = file('v1.yaml', tasksYaml());
    const diff = await cli(['diff', '-f', path]);
    expect(diff.code).toBe(3);
    expect(lines(diff.stdout)).toEqual([
      '+ create cli-report',
      '+ create cli-sync',
      '+ create cli-once',
      '3 to change (3 to create, 0 to update, 0 to delete), 0 unchanged',
    ]);
    const dry = await cli(['apply', '-f', path, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(lines(dry.stdout)).toEqual([
      '+ create cli-report',
      '+ create cli-sync',
      '+ create cli-once',
      '3 to change (3 to create, 0 to update, 0 to delete), 0 unchanged',
      '(dry run: nothing was changed)',
    ]);
    expect(await managed()).toEqual([]);
  });

  it('diff --help says what each line means and the exit codes, every sentence whole', async () => {
    const help = await runCli(['diff', '--help'], {});
    expect([help.code, help.stderr]).toEqual([0, '']);
    const text = help.stdout.replace(/\s+/g, ' ');
    expect(text).toContain('show what apply would change in the tasks and calendars of a file, and change nothing');
    for (const line of [
      '+ create NAME',
      '~ update NAME: FIELDS',
      '- delete NAME',
      '-f, --file <file>',
      '--prune',
      '-o, --output <format>',
    ])
      expect(help.stdout).toContain(line);
    expect(text).toContain('Without --prune, what --prune would delete is named after it (with -o json: "prunable"');
    expect(help.stdout.trimEnd().split('\n').at(-1)).toBe(
      'Exit codes: 0 nothing would change, 1 error, 2 bad usage, 3 something would change.',
    );
    // No line is cut in the middle of a phrase: none ends with a dangling "-" or "would".
    expect(help.stdout.split('\n').filter((line) => / (-|would)$/.test(line))).toEqual([]);
  });

  it('diff warns, as apply does, of a handler no live worker offers', async () => {
    const path = file(
      'unknown-handler.yaml',
      'managedBy: cli-warn\ntasks:\n  - { name: cli-warned, handler: cli-no-such-handler, schedule: { every: 1h } }\n',
    );
    const diff = await cli(['diff', '-f', path]);
    expect([diff.code, lines(diff.stdout)]).toEqual([
      3,
      ['+ create cli-warned', '1 to change (1 to create, 0 to update, 0 to delete), 0 unchanged'],
    ]);
    expect(diff.stderr).toBe('warning: no live worker offers handler "cli-no-such-handler"\n');
    const json = await cli(['diff', '-f', path, '-o', 'json']);
    expect([JSON.parse(json.stdout).warnings, json.stderr]).toEqual([
      ['no live worker offers handler "cli-no-such-handler"'],
      'warning: no live worker offers handler "cli-no-such-handler"\n',
    ]);
    expect(await managed('cli-warn')).toEqual([]);
  });

  it('apply creates the tasks; a second apply reports 0 changed and diff then exits 0', async () => {
    const path = file('v1.yaml', tasksYaml());
    const secretsFile = join(dir, 'secrets.json');
    writeFileSync(secretsFile, '{ "kept-from-before": "s" }');
    const applied = await cli(['apply', '-f', path, '--secrets-file', secretsFile]);
    expect(applied.code).toBe(0);
    const stored = await ctx.db.prisma.task.findMany({ where: { managedBy: 'cli-test' }, orderBy: { name: 'asc' } });
    expect(JSON.parse(readFileSync(secretsFile, 'utf8'))).toEqual({
      'kept-from-before': 's',
      ...Object.fromEntries(stored.map((t) => [t.name, t.secret])),
    });
    expect(statSync(secretsFile).mode & 0o777).toBe(0o600);
    taskSecrets.push(...stored.map((t) => t.secret));
    expect(lines(applied.stdout)).toEqual([
      '+ create cli-report',
      '+ create cli-sync',
      '+ create cli-once',
      '3 changed (3 created, 0 updated, 0 deleted), 0 unchanged',
    ]);
    expect(applied.stderr).toBe(
      'warning: no live worker offers handler "http"\nwarning: no live worker offers handler "noop"\nwarning: no live worker offers handler "log"\n',
    );
    expect(await managed()).toEqual(['cli-once@1', 'cli-report@1', 'cli-sync@1']);
    const again = await cli(['apply', '-f', path]);
    expect([again.code, again.stdout]).toEqual([0, '0 changed (0 created, 0 updated, 0 deleted), 3 unchanged\n']);
    const diff = await cli(['diff', '-f', path]);
    expect([diff.code, diff.stdout]).toEqual([0, '0 to change (0 to create, 0 to update, 0 to delete), 3 unchanged\n']);
    expect(await managed()).toEqual(['cli-once@1', 'cli-report@1', 'cli-sync@1']);
  });

  it('an update names the changed fields and shows secret values as •••, never the values themselves', async () => {
    const path = file('v2.yaml', tasksYaml({ cron: '30 9 * * 1-5' }));
    const changed = { REPORT_TOKEN: SECRETS.second, SYNC_KEY: SECRETS.syncSecond };
    const diff = await cli(['diff', '-f', path], changed);
    expect(diff.code).toBe(3);
    expect(lines(diff.stdout)).toEqual([
      '~ update cli-report: payload.headers.authorization: ••• → •••, schedule.cron: "0 9 * * 1-5" → "30 9 * * 1-5"',
      // Under the fields, what the change does to the next 20 fire times: each moves half an hour on its day.
      expect.stringMatching(
        /^ {4}next 20 fire times: 1\d moved \(\d{4}-\d\d-\d\d 09:00:00\+0[12]:00 → \d{4}-\d\d-\d\d 09:30:00\+0[12]:00, …\)/,
      ),
      '~ update cli-sync: payload.apiKey: ••• → •••',
      '2 to change (0 to create, 2 to update, 0 to delete), 1 unchanged',
    ]);
    const json = await cli(['apply', '-f', path, '--output', 'json'], changed);
    expect(json.code).toBe(0);
    const result = JSON.parse(json.stdout);
    expect(result).toMatchObject({ managedBy: 'cli-test', dryRun: false, changed: 2, updated: 2, unchanged: 1 });
    expect(result.items[1]).toEqual({
      name: 'cli-sync',
      action: 'update',
      changes: [{ field: 'payload.apiKey', before: null, after: null, secret: true }],
      version: 2,
    });
    expect(await managed()).toEqual(['cli-once@1', 'cli-report@2', 'cli-sync@2']);
    expect((await cli(['apply', '-f', path], changed)).stdout).toBe(
      '0 changed (0 created, 0 updated, 0 deleted), 3 unchanged\n',
    );
  });

  it('prune deletes only what the file manages and no longer declares; other tasks are never touched', async () => {
    await admin().tasks.create({ name: 'cli-by-hand', handler: 'noop', schedule: { cron: '0 0 * * *' } });
    await admin().tasks.apply({
      managedBy: 'other-repo',
      tasks: [{ name: 'cli-theirs', handler: 'noop', schedule: { cron: '0 0 * * *' } }],
    });
    const changed = { REPORT_TOKEN: SECRETS.second, SYNC_KEY: SECRETS.syncSecond };
    const path = file('v3.yaml', tasksYaml({ cron: '30 9 * * 1-5', once: false }));
    expect((await cli(['apply', '-f', path], changed)).stdout).toBe(
      '0 changed (0 created, 0 updated, 0 deleted), 2 unchanged\n',
    );
    expect(await managed()).toEqual(['cli-once@1', 'cli-report@2', 'cli-sync@2']);
    // Without --prune, diff names what --prune would delete, and has nothing to change.
    const plain = await cli(['diff', '-f', path], changed);
    expect([plain.code, lines(plain.stdout)]).toEqual([
      0,
      [
        '0 to change (0 to create, 0 to update, 0 to delete), 2 unchanged',
        'cli-once would be deleted with --prune (not in the file)',
      ],
    ]);
    expect(JSON.parse((await cli(['diff', '-f', path, '-o', 'json'], changed)).stdout).prunable).toEqual({
      tasks: ['cli-once'],
      calendars: [],
    });
    const diff = await cli(['diff', '-f', path, '--prune'], changed);
    expect([diff.code, lines(diff.stdout)]).toEqual([
      3,
      ['- delete cli-once', '1 to change (0 to create, 0 to update, 1 to delete), 2 unchanged'],
    ]);
    const pruned = await cli(['apply', '-f', path, '--prune'], changed);
    expect(lines(pruned.stdout)).toEqual([
      '- delete cli-once',
      '1 changed (0 created, 0 updated, 1 deleted), 2 unchanged',
    ]);
    expect(await managed()).toEqual(['cli-report@2', 'cli-sync@2']);
    expect(await managed('other-repo')).toEqual(['cli-theirs@1']);
    expect(await admin().tasks.get('cli-by-hand')).toMatchObject({ managedBy: null, version: 1 });

    const claiming = file(
      'claim.yaml',
      tasksYaml({
        cron: '30 9 * * 1-5',
        once: false,
        extra:
          '  - { name: cli-new, handler: noop, schedule: { every: 1h } }\n  - { name: cli-by-hand, handler: log, schedule: { every: 1h } }\n',
      }),
    );
    const refused = await cli(['apply', '-f', claiming, '--prune'], changed);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `error: ${claiming}:16: task "cli-by-hand": exists and is managed by nobody, not by "cli-test"\n`,
    );
    expect(await managed()).toEqual(['cli-report@2', 'cli-sync@2']);
    expect(await admin().tasks.get('cli-by-hand')).toMatchObject({ handler: 'noop', version: 1 });
  });

  it('applies calendars beside tasks: creates both, then nothing, updates a date, leaves them alone without the key and prunes both', async () => {
    const calendarsYaml = (options: { dates: string; ledger?: boolean; calendars?: boolean }) => `
managedBy: cli-cal
${
  options.calendars === false
    ? ''
    : `calendars:
${
  options.ledger === false
    ? '  []'
    : `  - name: cli-holidays
    timezone: America/New_York
    dates: [${options.dates}]
    rrules: ["FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4"]`
}
`
}tasks:
${
  options.ledger === false
    ? ''
    : `  - name: cli-ledger
    handler: noop
    schedule: { cron: "0 9 * * *", timezone: America/New_York, exclude: [cli-holidays] }
`
}  - name: cli-plain
    handler: noop
    schedule: { every: 1h }
`;
    const calendar = () => admin().calendars.get('cli-holidays');
    const v1 = file('cal-v1.yaml', calendarsYaml({ dates: '"2026-12-25", "2027-01-01"' }));
    const diff = await cli(['diff', '-f', v1]);
    expect(diff.code).toBe(3);
    expect(lines(diff.stdout)).toEqual([
      '+ create calendar cli-holidays',
      '+ create cli-ledger',
      '+ create cli-plain',
      'tasks: 2 to change (2 to create, 0 to update, 0 to delete), 0 unchanged',
      'calendars: 1 to change (1 to create, 0 to update, 0 to delete), 0 unchanged',
    ]);
    await expect(calendar()).rejects.toMatchObject({ status: 404 });

    const applied = await cli(['apply', '-f', v1]);
    expect(applied.code).toBe(0);
    expect(lines(applied.stdout)).toEqual([
      '+ create calendar cli-holidays',
      '+ create cli-ledger',
      '+ create cli-plain',
      'tasks: 2 changed (2 created, 0 updated, 0 deleted), 0 unchanged',
      'calendars: 1 changed (1 created, 0 updated, 0 deleted), 0 unchanged',
    ]);
    expect(await calendar()).toMatchObject({
      managedBy: 'cli-cal',
      timezone: 'America/New_York',
      dates: ['2026-12-25', '2027-01-01'],
      rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4'],
      tasks: ['cli-ledger'],
      version: 1,
    });
    expect((await admin().tasks.get('cli-ledger')).schedule.exclude).toEqual(['cli-holidays']);
    const json = JSON.parse((await cli(['apply', '-f', v1, '-o', 'json'])).stdout);
    expect(json.calendars).toEqual([{ name: 'cli-holidays', action: 'unchanged', changes: [], version: 1 }]);
    const again = await cli(['apply', '-f', v1]);
    expect([again.code, again.stdout]).toEqual([
      0,
      'tasks: 0 changed (0 created, 0 updated, 0 deleted), 2 unchanged\ncalendars: 0 changed (0 created, 0 updated, 0 deleted), 1 unchanged\n',
    ]);
    const noDiff = await cli(['diff', '-f', v1]);
    expect([noDiff.code, lines(noDiff.stdout)]).toEqual([
      0,
      [
        'tasks: 0 to change (0 to create, 0 to update, 0 to delete), 2 unchanged',
        'calendars: 0 to change (0 to create, 0 to update, 0 to delete), 1 unchanged',
      ],
    ]);

    // One more date: the calendar is updated (its tasks re-planned), the tasks' definitions are unchanged.
    const v2 = file('cal-v2.yaml', calendarsYaml({ dates: '"2026-12-25", "2027-01-01", "2027-05-31"' }));
    const update = [
      '~ update calendar cli-holidays: dates: ["2026-12-25","2027-01-01"] → ["2026-12-25","2027-01-01","2027-05-31"]',
    ];
    const diff2 = await cli(['diff', '-f', v2]);
    expect([diff2.code, lines(diff2.stdout)]).toEqual([
      3,
      [
        ...update,
        'tasks: 0 to change (0 to create, 0 to update, 0 to delete), 2 unchanged',
        'calendars: 1 to change (0 to create, 1 to update, 0 to delete), 0 unchanged',
      ],
    ]);
    const updated = await cli(['apply', '-f', v2]);
    expect([updated.code, lines(updated.stdout)]).toEqual([
      0,
      [
        ...update,
        'tasks: 0 changed (0 created, 0 updated, 0 deleted), 2 unchanged',
        'calendars: 1 changed (0 created, 1 updated, 0 deleted), 0 unchanged',
      ],
    ]);
    expect(await calendar()).toMatchObject({ dates: ['2026-12-25', '2027-01-01', '2027-05-31'], version: 2 });

    // Without the key the file says nothing about calendars: even --prune leaves them alone.
    const silent = file('cal-silent.yaml', calendarsYaml({ dates: '', calendars: false }));
    const left = await cli(['apply', '-f', silent, '--prune']);
    expect([left.code, left.stdout]).toEqual([0, '0 changed (0 created, 0 updated, 0 deleted), 2 unchanged\n']);
    expect(await calendar()).toMatchObject({ version: 2 });

    // The calendar and the task that excludes it leave the file: --prune deletes both.
    const removed = file('cal-removed.yaml', calendarsYaml({ dates: '', ledger: false }));
    const kept = await cli(['diff', '-f', removed]);
    expect([kept.code, lines(kept.stdout)]).toEqual([
      0,
      [
        '0 to change (0 to create, 0 to update, 0 to delete), 1 unchanged',
        'calendar cli-holidays would be deleted with --prune (not in the file)',
        'cli-ledger would be deleted with --prune (not in the file)',
      ],
    ]);
    const prunes = await cli(['diff', '-f', removed, '--prune']);
    expect([prunes.code, lines(prunes.stdout)]).toEqual([
      3,
      [
        '- delete calendar cli-holidays',
        '- delete cli-ledger',
        'tasks: 1 to change (0 to create, 0 to update, 1 to delete), 1 unchanged',
        'calendars: 1 to change (0 to create, 0 to update, 1 to delete), 0 unchanged',
      ],
    ]);
    const pruned = await cli(['apply', '-f', removed, '--prune']);
    expect([pruned.code, lines(pruned.stdout)]).toEqual([
      0,
      [
        '- delete calendar cli-holidays',
        '- delete cli-ledger',
        'tasks: 1 changed (0 created, 0 updated, 1 deleted), 1 unchanged',
        'calendars: 1 changed (0 created, 0 updated, 1 deleted), 0 unchanged',
      ],
    ]);
    await expect(calendar()).rejects.toMatchObject({ status: 404 });
    expect(await managed('cli-cal')).toEqual(['cli-plain@1']);
  });

  it("refuses a task excluding a calendar that neither the file nor the API has, and a calendar the API cannot read, naming file, the field's own line and field", async () => {
    const unknown = file(
      'cal-unknown.yaml',
      'managedBy: cli-cal\ntasks:\n  - name: cli-excluding\n    handler: noop\n    schedule: { cron: "0 9 * * *", exclude: [cli-nowhere] }\n',
    );
    const refused = await cli(['apply', '-f', unknown]);
    expect([refused.code, refused.stdout]).toEqual([1, '']);
    // The line of the field the API names (the schedule's), not the task's first line.
    expect(refused.stderr).toBe(
      `error: ${unknown}:5: task "cli-excluding": schedule.exclude[0]: no calendar named "cli-nowhere"\n`,
    );
    const json = await cli(['diff', '-f', unknown, '-o', 'json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).error).toMatchObject({
      code: 'unknown_calendar',
      details: [
        { field: 'tasks[0].schedule.exclude[0]', message: expect.stringContaining('no calendar named "cli-nowhere"') },
      ],
    });
    await expect(admin().tasks.get('cli-excluding')).rejects.toMatchObject({ status: 404 });

    const badDate = file(
      'cal-bad-date.yaml',
      'managedBy: cli-cal\ntasks: []\ncalendars:\n  - { name: cli-ok-cal, dates: [] }\n  - name: cli-bad-cal\n    dates: ["2026-02-30"]\n',
    );
    const bad = await cli(['apply', '-f', badDate]);
    expect([bad.code, bad.stderr]).toEqual([
      1,
      `error: ${badDate}:6: calendar "cli-bad-cal": dates[0]: must be a date such as 2026-12-25, got "2026-02-30"\n`,
    ]);
    expect((await admin().calendars.list()).map((c) => c.name)).toEqual([]);
  });

  it("says in one round what the file's own checks and the API find wrong, each at its field's line, in the file's order, and applies nothing", async () => {
    const both = file(
      'both.yaml',
      [
        'managedBy: cli-round',
        'tasks:',
        '  - name: cli-round-cron',
        '    handler: noop',
        '    schedule: { cron: "61 * * * *" }',
        '  - name: cli-round-typo',
        '    handler: noop',
        '    schedule: { cron: "0 9 * * *" }',
        '    paylod: {}',
        '',
      ].join('\n'),
    );
    for (const command of ['apply', 'diff']) {
      const result = await cli([command, '-f', both]);
      expect([result.code, result.stdout], command).toEqual([1, '']);
      expect(lines(result.stderr), command).toEqual([
        `error: ${both}:5: task "cli-round-cron": schedule.cron: minute field "61": 61 is outside 0-59`,
        `error: ${both}:9: task "cli-round-typo": paylod: unknown field, did you mean "payload"?`,
      ]);
    }
    expect((await admin().tasks.list({ managedBy: 'cli-round' }).all()).length).toBe(0);
  });

  it('refuses bad files with one clear line each, a non-zero exit and nothing applied', async () => {
    const before = await ctx.db.prisma.task.count();
    const spec = (name: string, extra = '') =>
      `  - name: ${name}\n    handler: noop\n    schedule: { cron: "0 9 * * *" }\n${extra}`;
    const cases: [string, string, RegExp, Record<string, string>?][] = [
      [
        'malformed.yaml',
        `tasks:\n${spec('cli-ok')}  - name: [cli-broken\n`,
        /^malformed\.yaml:\d+: not valid YAML or JSON: /,
      ],
      [
        'unknown.yaml',
        `tasks:\n${spec('cli-ok')}${spec('cli-x', '    colour: red\n')}`,
        /^unknown\.yaml:8: task "cli-x": colour: unknown field$/,
      ],
      [
        'typo.yaml',
        `tasks:\n${spec('cli-ok')}${spec('cli-x', '    paylod: {}\n')}`,
        /^typo\.yaml:8: task "cli-x": paylod: unknown field, did you mean "payload"\?$/,
      ],
      [
        'no-handler.yaml',
        `tasks:\n${spec('cli-ok')}  - name: cli-x\n    schedule: { every: 1h }\n`,
        /^no-handler\.yaml:5: task "cli-x": handler is required$/,
      ],
      [
        'duplicate.yaml',
        `tasks:\n${spec('cli-ok')}${spec('cli-ok')}`,
        /^duplicate\.yaml:5: task "cli-ok": the name is declared twice \(first at line 2\)$/,
      ],
      [
        'env.yaml',
        `tasks:\n${spec('cli-ok', '    payload: { token: "${MISSING_VAR}" }\n')}`,
        /^env\.yaml:5: task "cli-ok": payload\.token: environment variable MISSING_VAR is not set$/,
      ],
      [
        'cron.yaml',
        `tasks:\n${spec('cli-ok')}  - name: cli-bad-cron\n    handler: noop\n    schedule: { cron: "61 * * * *" }\n`,
        /^cron\.yaml:7: task "cli-bad-cron": schedule\.cron: minute field "61": 61 is outside 0-59$/,
      ], // the API's word, at the field's own line
      [
        'past.json',
        JSON.stringify({
          tasks: [
            { name: 'cli-ok', handler: 'noop', schedule: { every: '1h' } },
            { name: 'cli-past', handler: 'noop', schedule: { at: '2001-01-01T00:00:00Z' } },
          ],
        }),
        /^past\.json:1: task "cli-past": schedule\.at: is in the past$/,
      ],
    ];
    for (const [name, text, expected] of cases) {
      const path = file(name, text);
      const result = await cli(['apply', '-f', path]);
      expect(result.code, name).toBe(1);
      expect(result.stdout, name).toBe('');
      const [line, ...more] = lines(result.stderr);
      expect(more, name).toEqual([]);
      expect(line!.replace(`error: ${dir}/`, ''), name).toMatch(expected);
    }
    const missing = await cli(['apply', '-f', join(dir, 'absent.yaml')]);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      `error: ${join(dir, 'absent.yaml')}: cannot read the file (ENOENT)\n`,
    ]);
    expect(await ctx.db.prisma.task.count()).toBe(before);
  });

  it('says in one line when the server is unreachable or refuses the key', async () => {
    const path = file('v1.yaml', tasksYaml());
    const closed = await closedPort();
    const unreachable = await cli(['diff', '-f', path], { PUNCTUAL_URL: `http://127.0.0.1:${closed}` });
    expect([unreachable.code, unreachable.stderr]).toEqual([
      1,
      `error: cannot reach the Punctual API at http://127.0.0.1:${closed} (ECONNREFUSED): is it running, and is PUNCTUAL_URL right?\n`,
    ]);
    const wrongKey = await cli(['apply', '-f', path], { PUNCTUAL_API_KEY: 'pk_wrong_key_0123456789' });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/^error: the API refused the key in PUNCTUAL_API_KEY \(401 [a-z_]+\): .+\n$/);
    const noKey = await cli(['apply', '-f', path], { PUNCTUAL_API_KEY: '' });
    expect([noKey.code, noKey.stderr]).toEqual([1, 'error: the API wants a key: set PUNCTUAL_API_KEY\n']);
    const viewer = (await admin().apiKeys.create({ name: 'cli-viewer', role: 'viewer' })).key;
    const forbidden = await cli(['diff', '-f', path], { PUNCTUAL_API_KEY: viewer });
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(
      /^error: the key in PUNCTUAL_API_KEY lacks the role for this \(403 [a-z_]+\): .+\n$/,
    );
    const badUrl = await cli(['diff', '-f', path], { PUNCTUAL_URL: 'not a url' });
    expect([badUrl.code, badUrl.stderr]).toEqual([
      2,
      'error: PUNCTUAL_URL must be an http(s) URL such as http://127.0.0.1:3000, not "not a url"\n',
    ]);
  });

  it('prints exactly one JSON document with --output json, errors included', async () => {
    const path = file('v1.yaml', tasksYaml());
    const diff = await cli(['--output', 'json', 'diff', '-f', path, '--prune']);
    expect(diff.code).toBe(3);
    expect(JSON.parse(diff.stdout)).toMatchObject({ dryRun: true, created: 1, updated: 2, deleted: 0 });
    const failed = await cli(['apply', '-f', join(dir, 'absent.yaml'), '-o', 'json']);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toEqual({
      error: {
        code: 'invalid_file',
        message: `${join(dir, 'absent.yaml')}: cannot read the file (ENOENT)`,
        details: [],
      },
    });
  });

  it('applies examples/tasks.yaml, every schedule kind and policy and a calendar, and then has nothing to change', async () => {
    const exampleEnv = { REPORT_TOKEN: SECRETS.first, REPORT_HOST: 'reports.example.com' };
    const applied = await cli(['apply', '-f', EXAMPLE], exampleEnv);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/^\+ create calendar us-holidays$/m);
    expect(applied.stdout).toMatch(
      /^tasks: 5 changed \(5 created, 0 updated, 0 deleted\), 0 unchanged\ncalendars: 1 changed \(1 created, 0 updated, 0 deleted\), 0 unchanged$/m,
    );
    expect(await admin().calendars.get('us-holidays')).toMatchObject({
      managedBy: 'example-repo',
      timezone: 'America/New_York',
      rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4'],
      tasks: ['ledger-close'],
    });
    const tasks = await admin().tasks.list({ managedBy: 'example-repo' }).all();
    expect(
      tasks.map((t) => Object.keys(t.schedule).find((k) => ['cron', 'rrule', 'at', 'every'].includes(k))).sort(),
    ).toEqual(['at', 'cron', 'cron', 'every', 'rrule']);
    expect(new Set(tasks.map((t) => t.policy.overlap))).toEqual(new Set(['skip', 'allow', 'buffer_one', 'replace']));
    expect(new Set(tasks.map((t) => t.policy.misfire))).toEqual(new Set(['run_once', 'run_all', 'skip']));
    expect(tasks.find((t) => t.name === 'migration-cutover')?.status).toBe('paused');
    expect(tasks.find((t) => t.name === 'nightly-report')?.policy).toMatchObject({
      concurrency: { key: 'reporting-service', limit: 2 },
      rateLimit: { key: 'reporting-service', limit: 100, per: '1m' },
    });
    expect(tasks.find((t) => t.name === 'nightly-report')?.slo).toEqual({ startWithin: '1m' });
    const shown = await cli(['tasks', 'get', 'nightly-report']);
    expect(shown.stdout).toMatch(
      /^flow control: +at most 2 at once under reporting-service; at most 100 starts per 1m under reporting-service$/m,
    );
    expect(shown.stdout).toMatch(/^slo: +start within 1m of the fire time$/m);
    expect((await cli(['tasks', 'get', 'ledger-close'])).stdout).toMatch(
      /^excludes: +the days of calendar us-holidays$/m,
    );
    const again = await cli(['diff', '-f', EXAMPLE], exampleEnv);
    expect([again.code, again.stdout]).toEqual([
      0,
      'tasks: 0 to change (0 to create, 0 to update, 0 to delete), 5 unchanged\ncalendars: 0 to change (0 to create, 0 to update, 0 to delete), 1 unchanged\n',
    ]);
  });

  it('never printed a secret value from the environment', () => {
    const printed = outputs.map((o) => o.stdout + o.stderr).join('\n');
    expect(outputs.length).toBeGreaterThan(15);
    for (const secret of [...Object.values(SECRETS), ...taskSecrets]) expect(printed).not.toContain(secret);
    expect(taskSecrets).toHaveLength(3);
    expect(printed).toContain('•••');
  });
});
