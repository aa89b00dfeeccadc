import { PunctualClient } from '@punctual/client';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { ensureCliBuilt, runCli } from './run-cli.js';

describe('punctual commands', () => {
  const ctx = useApiSandbox();
  const admin = () => new PunctualClient({ baseUrl: ctx.api.base, apiKey: ctx.api.config.adminApiKey });
  const cli = (...args: string[]) =>
    runCli(args, { PUNCTUAL_URL: ctx.api.base, PUNCTUAL_API_KEY: ctx.api.config.adminApiKey });
  const lines = (text: string) => text.trim().split('\n');

  beforeAll(() => ensureCliBuilt(), 300_000);

  it('has --help on every command, exit code 0', async () => {
    const commands = [
      [],
      ['tasks'],
      ['tasks', 'ls'],
      ['tasks', 'get'],
      ['tasks', 'pause'],
      ['tasks', 'resume'],
      ['tasks', 'trigger'],
      ['tasks', 'delete'],
      ['calendars'],
      ['calendars', 'ls'],
      ['calendars', 'get'],
      ['runs'],
      ['preview'],
      ['diff'],
      ['apply'],
    ];
    const helps = await Promise.all(commands.map((command) => runCli([...command, '--help'], {})));
    commands.forEach((command, i) => {
      expect(helps[i]!.code, command.join(' ')).toBe(0);
      expect(helps[i]!.stdout, command.join(' ')).toMatch(
        new RegExp(`^Usage: punctual${command.map((c) => ` ${c}`).join('')} `),
      );
    });
    expect((await runCli(['--help'], {})).stdout).toContain('PUNCTUAL_URL');
    expect((await runCli(['apply', '--help'], {})).stdout).toMatch(/--prune[\s\S]*--dry-run/);
    expect((await runCli(['tasks', 'ls', '--help'], {})).stdout).toMatch(
      /--health <state>[\s\S]*"late",\s+"failing",\s+"never_ran",\s+"paused",\s+"ok",\s+"completed"/,
    );
  });

  it('answers bad usage with exit code 2 and a line on stderr', async () => {
    const misuses = [
      [],
      ['bogus'],
      ['tasks', 'ls', '--nope'],
      ['tasks', 'get'],
      ['apply'],
      ['diff', '-f'],
      ['preview', '0 9 * * *', '--count', '0'],
      ['-o', 'xml', 'tasks', 'ls'],
      ['tasks', 'trigger', 'x', '--payload', '[1]'],
      ['tasks', 'resume', 'x', '--catch-up', 'maybe'],
      ['runs', 'x', '--limit', 'many'],
      ['preview', '0 9 * * *', '--from', 'yesterday'],
      ['tasks', 'get', 'a', 'b'],
      ['tasks', 'ls', '--health', 'sick'],
      ['calendars', 'get'],
      ['calendars', 'get', 'a', 'b'],
      ['calendars', 'bogus'],
    ];
    const results = await Promise.all(misuses.map((args) => runCli(args, {})));
    misuses.forEach((args, i) => {
      expect(results[i]!.code, args.join(' ')).toBe(2);
      expect(results[i]!.stderr, args.join(' ')).toMatch(/error|Usage/);
    });
  });

  it('lists, shows, pauses, resumes, triggers and deletes a task, times in its zone and UTC', async () => {
    await admin().tasks.create({
      name: 'cmd-berlin',
      handler: 'noop',
      schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
      labels: { team: 'cli' },
    });
    await admin().tasks.create({ name: 'cmd-utc', handler: 'noop', schedule: { every: '15m' } });

    const ls = await cli('tasks', 'ls', '--label', 'team=cli');
    expect(ls.code).toBe(0);
    const [header, row, ...rest] = lines(ls.stdout);
    expect(rest).toEqual([]);
    expect(header!.split(/\s{2,}/)).toEqual([
      'HEALTH',
      'NAME',
      'STATUS',
      'SCHEDULE',
      'ZONE',
      'NEXT RUN (ZONE)',
      'NEXT RUN (UTC)',
      'MANAGED BY',
    ]);
    expect(row).toMatch(
      /^never_ran\s+cmd-berlin\s+active\s+cron 0 9 \* \* \*\s+Europe\/Berlin\s+\d{4}-\d\d-\d\d 09:00:00\+0[12]:00\s+\d{4}-\d\d-\d\d 0[78]:00:00Z\s+-$/,
    );
    const all = JSON.parse((await cli('tasks', 'ls', '--output', 'json')).stdout);
    expect(all.items.map((t: { name: string }) => t.name)).toEqual(['cmd-berlin', 'cmd-utc']);
    expect(lines((await cli('tasks', 'ls', '--limit', '1')).stdout)).toHaveLength(2);

    const get = await cli('tasks', 'get', 'cmd-berlin');
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(/^schedule:\s+cron 0 9 \* \* \* in Europe\/Berlin$/m);
    expect(get.stdout).toMatch(/^health:\s+never_ran, last success -, 0 consecutive failures$/m);
    expect(get.stdout).not.toMatch(/^(slo|excludes):/m);
    expect(
      get.stdout.match(/^ {2}\d{4}-\d\d-\d\d 09:00:00\+0[12]:00 Europe\/Berlin \(\d{4}-\d\d-\d\d 0[78]:00:00Z\)$/gm),
    ).toHaveLength(5);
    expect(JSON.parse((await cli('tasks', 'get', 'cmd-berlin', '-o', 'json')).stdout)).toMatchObject({
      name: 'cmd-berlin',
      upcoming: expect.any(Array),
    });

    expect((await cli('tasks', 'pause', 'cmd-berlin')).stdout).toBe('paused cmd-berlin\n');
    expect((await admin().tasks.get('cmd-berlin')).status).toBe('paused');
    const pausedOnly = await cli('tasks', 'ls', '--health', 'paused');
    expect(
      lines(pausedOnly.stdout)
        .slice(1)
        .map((l) => l.split(/\s{2,}/).slice(0, 2)),
    ).toEqual([['paused', 'cmd-berlin']]);
    expect((await cli('tasks', 'ls', '--health', 'late')).stdout).toBe('no tasks\n');
    expect((await cli('tasks', 'get', 'cmd-berlin')).stdout).toMatch(
      /^health:\s+paused, last success -, 0 consecutive failures$/m,
    );
    expect((await cli('tasks', 'resume', 'cmd-berlin', '--catch-up', 'skip')).stdout).toMatch(
      /^resumed cmd-berlin: next run \d{4}-\d\d-\d\d 09:00:00\+0[12]:00 Europe\/Berlin \(.*Z\)\n$/,
    );
    expect((await admin().tasks.get('cmd-berlin')).status).toBe('active');

    const trigger = await cli('tasks', 'trigger', 'cmd-berlin', '--payload', '{"why":"cli"}');
    expect(trigger.stdout).toMatch(/^triggered cmd-berlin: execution [0-9a-f-]{36} \((scheduled|queued)\)\n$/);
    const runs = await cli('runs', 'cmd-berlin');
    expect(runs.code).toBe(0);
    expect(lines(runs.stdout)[0]!.split(/\s{2,}/)).toEqual([
      'ID',
      'SLOT (Europe/Berlin)',
      'SLOT (UTC)',
      'TRIGGER',
      'STATUS',
      'ATTEMPT',
      'DURATION',
      'ERROR',
    ]);
    expect(lines(runs.stdout)[1]).toMatch(
      /^[0-9a-f-]{36}\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+0[12]:00\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+manual\s+(scheduled|queued)\s+0\s+-\s+-$/,
    );
    expect(JSON.parse((await cli('runs', 'cmd-berlin', '--output', 'json')).stdout).items).toHaveLength(1);

    expect((await cli('tasks', 'delete', 'cmd-berlin')).stdout).toBe('deleted cmd-berlin\n');
    // Its history stays, under its name.
    const history = await cli('runs', 'cmd-berlin');
    expect(history.code).toBe(0);
    expect(lines(history.stdout)[0]).toBe('cmd-berlin was deleted; its history:');
    expect(lines(history.stdout)[1]!.split(/\s{2,}/)).toEqual([
      'ID',
      'SLOT (UTC)',
      'TRIGGER',
      'STATUS',
      'ATTEMPT',
      'DURATION',
      'ERROR',
    ]);
    expect(lines(history.stdout)[2]).toMatch(/^[0-9a-f-]{36}\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+manual\s+cancelled\s/);
    const gone = await cli('tasks', 'get', 'cmd-berlin');
    expect([gone.code, gone.stdout, gone.stderr]).toEqual([
      1,
      '',
      'error: no task named "cmd-berlin" (404 not_found)\n',
    ]);
    const goneJson = await cli('tasks', 'pause', 'cmd-berlin', '-o', 'json');
    expect(goneJson.code).toBe(1);
    expect(JSON.parse(goneJson.stdout)).toEqual({
      error: { code: 'not_found', message: 'no task named "cmd-berlin" (404 not_found)', details: [] },
    });
  });

  it('lists and shows calendars of excluded days, and a task that excludes one with its slo', async () => {
    expect((await cli('calendars', 'ls')).stdout).toBe('no calendars\n');
    await admin().calendars.put('cmd-holidays', {
      description: 'US holidays',
      timezone: 'America/New_York',
      dates: ['2027-01-01', '2026-12-25'],
      rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4', 'FREQ=YEARLY;BYMONTH=11;BYDAY=4TH'],
    });
    await admin().calendars.put('cmd-weekends', {
      dates: [],
      rrules: ['FREQ=WEEKLY;BYDAY=SA,SU'],
      managedBy: 'ops-repo',
    });
    await admin().tasks.create({
      name: 'cmd-excluding',
      handler: 'noop',
      schedule: { cron: '0 9 * * *', timezone: 'America/New_York', exclude: ['cmd-holidays', 'cmd-weekends'] },
      slo: { startWithin: '1m' },
    });
    await admin().tasks.create({
      name: 'cmd-excluding-too',
      handler: 'noop',
      schedule: { every: '1h', exclude: ['cmd-holidays'] },
    });

    const ls = await cli('calendars', 'ls');
    expect(ls.code).toBe(0);
    expect(lines(ls.stdout).map((l) => l.split(/\s{2,}/))).toEqual([
      ['NAME', 'ZONE', 'DATES', 'RULES', 'TASKS', 'MANAGED BY'],
      ['cmd-holidays', 'America/New_York', '2', '2', '2', '-'],
      ['cmd-weekends', "task's", '0', '1', '1', 'ops-repo'],
    ]);
    expect(
      JSON.parse((await cli('calendars', 'ls', '-o', 'json')).stdout).items.map(
        (c: { name: string; tasks: string[] }) => [c.name, c.tasks],
      ),
    ).toEqual([
      ['cmd-holidays', ['cmd-excluding', 'cmd-excluding-too']],
      ['cmd-weekends', ['cmd-excluding']],
    ]);

    const get = await cli('calendars', 'get', 'cmd-holidays');
    expect(get.code).toBe(0);
    expect(lines(get.stdout)).toEqual([
      'name:        cmd-holidays',
      'description: US holidays',
      'zone:        America/New_York',
      'version:     1',
      'managed by:  -',
      'dates:       2',
      '  2026-12-25',
      '  2027-01-01',
      'rules:       2',
      '  FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4',
      '  FREQ=YEARLY;BYMONTH=11;BYDAY=4TH',
      'excluded by: 2',
      '  cmd-excluding',
      '  cmd-excluding-too',
    ]);
    const weekends = await cli('calendars', 'get', 'cmd-weekends');
    expect(weekends.stdout).toMatch(/^zone: +each task's own schedule zone$/m);
    expect(weekends.stdout).toMatch(
      /^dates: +-\nrules: +1\n {2}FREQ=WEEKLY;BYDAY=SA,SU\nexcluded by: +1\n {2}cmd-excluding$/m,
    );
    expect(JSON.parse((await cli('calendars', 'get', 'cmd-holidays', '--output', 'json')).stdout)).toMatchObject({
      name: 'cmd-holidays',
      dates: ['2026-12-25', '2027-01-01'],
      tasks: ['cmd-excluding', 'cmd-excluding-too'],
      version: 1,
    });
    const missing = await cli('calendars', 'get', 'cmd-nowhere');
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([
      1,
      '',
      'error: no calendar named "cmd-nowhere" (404 not_found)\n',
    ]);

    const task = await cli('tasks', 'get', 'cmd-excluding');
    expect(task.stdout).toMatch(/^health: +never_ran, last success -, 0 consecutive failures$/m);
    expect(task.stdout).toMatch(/^slo: +start within 1m of the fire time$/m);
    expect(task.stdout).toMatch(/^excludes: +the days of calendars cmd-holidays, cmd-weekends$/m);
    expect((await cli('tasks', 'get', 'cmd-excluding-too')).stdout).toMatch(
      /^excludes: +the days of calendar cmd-holidays$/m,
    );
    expect((await cli('tasks', 'ls', '--health', 'never_ran', '-q', 'cmd-excluding')).stdout).toMatch(
      /^never_ran +cmd-excluding +active/m,
    );
  });

  it('previews a cron expression in its zone and UTC, across a change of the clocks', async () => {
    const preview = await cli(
      'preview',
      '0 9 * * *',
      '--tz',
      'Europe/Berlin',
      '--count',
      '3',
      '--from',
      '2026-03-27T00:00:00Z',
    );
    expect(preview.code).toBe(0);
    expect(lines(preview.stdout)).toEqual([
      '#  LOCAL (Europe/Berlin)      UTC',
      '1  2026-03-27 09:00:00+01:00  2026-03-27 08:00:00Z',
      '2  2026-03-28 09:00:00+01:00  2026-03-28 08:00:00Z',
      '3  2026-03-29 09:00:00+02:00  2026-03-29 07:00:00Z',
    ]);
    const json = JSON.parse(
      (await cli('preview', '*/15 * * * *', '--count', '2', '--from', '2026-01-01T00:00:00Z', '-o', 'json')).stdout,
    );
    expect(json.fireTimes.map((t: { at: string }) => t.at)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:15:00.000Z',
    ]);
    const bad = await cli('preview', '61 * * * *');
    expect(bad.code).toBe(1);
    expect(lines(bad.stderr)).toEqual([
      expect.stringMatching(/^error: .*schedule\.cron.*61.* \(422 invalid_schedule\)$/),
    ]);
  });

  it('tasks get: the last run is the latest due one (a dead one when the runs died), the next runs start with the slot planned ahead', async () => {
    await admin().tasks.create({ name: 'cmd-dying', handler: 'noop', schedule: { cron: '0 * * * *' } });
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'cmd-dying' } });
    const hour = 3_600_000;
    const last = Math.floor(Date.now() / hour) * hour;
    // As the scheduler leaves it: the next slot planned ahead (ten minutes off at least), the cursor on the one after.
    let ahead = last + hour;
    if (ahead - Date.now() < 600_000) ahead += hour;
    const row = (slot: number, status: 'dead' | 'scheduled') => ({
      id: executionIdFor(new Date(slot)),
      taskId: task.id,
      taskName: task.name,
      scheduledFor: new Date(slot),
      fireAt: new Date(slot),
      taskVersion: task.version,
      status,
      attempt: status === 'dead' ? 3 : 0,
    });
    await ctx.db.prisma.taskExecution.createMany({
      data: [row(last - hour, 'dead'), row(last, 'dead'), row(ahead, 'scheduled')],
    });
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: new Date(ahead + hour) } });
    const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}Z`;
    const get = await cli('tasks', 'get', 'cmd-dying');
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(new RegExp(`^last run:\\s+dead, slot ${utc(last)}$`, 'm'));
    expect(get.stdout.match(/^ {2}\d{4}-.*Z$/gm)?.slice(0, 2)).toEqual([`  ${utc(ahead)}`, `  ${utc(ahead + hour)}`]);
  });
});
