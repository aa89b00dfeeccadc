import { randomUUID } from 'node:crypto';
import { PunctualClient } from '@punctual/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { ensureCliBuilt, runCli } from './run-cli.js';

describe('punctual runs and executions', () => {
  const ctx = useApiSandbox();
  const admin = () => new PunctualClient({ baseUrl: ctx.api.base, apiKey: ctx.api.config.adminApiKey });
  const cli = (args: string[], key = ctx.api.config.adminApiKey) =>
    runCli(args, { PUNCTUAL_URL: ctx.api.base, PUNCTUAL_API_KEY: key });
  const cells = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((line) => line.split(/\s{2,}/));

  /** A run of `task` that spent its attempts, as a worker leaves it in the dead letter. */
  /** A whole hour this long ago: a dead letter the retention still keeps (one to act on). */
  const hoursAgo = (hours: number) => new Date(Math.floor(Date.now() / 3_600_000 - hours) * 3_600_000);

  async function insertDeadRun(task: string, scheduledFor: Date): Promise<string> {
    const row = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: task } });
    const id = randomUUID();
    const finishedAt = new Date(scheduledFor.getTime() + 1_500);
    await ctx.db.historyAt(scheduledFor);
    await ctx.db.prisma.taskExecution.create({
      data: {
        id,
        taskId: row.id,
        taskName: task,
        scheduledFor,
        fireAt: scheduledFor,
        taskVersion: row.version,
        status: 'dead',
        attempt: 3,
        workerId: 'host-a:1',
        queuedAt: scheduledFor,
        startedAt: scheduledFor,
        finishedAt,
        error: 'HTTP 500 from the endpoint',
      },
    });
    await ctx.db.prisma.executionEvent.create({
      data: {
        executionId: id,
        scheduledFor,
        fromStatus: 'running',
        toStatus: 'dead',
        at: finishedAt,
        workerId: 'host-a:1',
      },
    });
    return id;
  }

  beforeAll(() => ensureCliBuilt(), 300_000);

  it('shows each run with its id; one slot column for a UTC task, two for another zone', async () => {
    await admin().tasks.create({ name: 'runs-utc', handler: 'noop', schedule: { cron: '0 * * * *' } });
    await admin().tasks.create({
      name: 'runs-berlin',
      handler: 'noop',
      schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
    });
    const dead = await insertDeadRun('runs-utc', new Date('2026-01-15T10:00:00Z'));
    const triggered = await admin().tasks.trigger('runs-utc');

    const utc = await cli(['runs', 'runs-utc']);
    expect(utc.code).toBe(0);
    const [header, ...rows] = cells(utc.stdout);
    expect(header).toEqual(['ID', 'SLOT (UTC)', 'TRIGGER', 'STATUS', 'ATTEMPT', 'DURATION', 'ERROR']);
    // Newest first: the manual run now, then the dead slot of January.
    expect(rows.map((r) => [r[0], r[2], r[3]])).toEqual([
      [triggered.id, 'manual', triggered.status],
      [dead, 'schedule', 'dead'],
    ]);
    expect(rows[1]).toEqual([
      dead,
      '2026-01-15 10:00:00Z',
      'schedule',
      'dead',
      '3',
      '1500ms',
      'HTTP 500 from the endpoint',
    ]);
    expect(utc.stdout).not.toMatch(/\+00:00/);

    const berlinRun = await insertDeadRun('runs-berlin', new Date('2026-01-15T08:00:00Z'));
    const berlin = await cli(['runs', 'runs-berlin']);
    expect(cells(berlin.stdout)).toEqual([
      ['ID', 'SLOT (Europe/Berlin)', 'SLOT (UTC)', 'TRIGGER', 'STATUS', 'ATTEMPT', 'DURATION', 'ERROR'],
      [
        berlinRun,
        '2026-01-15 09:00:00+01:00',
        '2026-01-15 08:00:00Z',
        'schedule',
        'dead',
        '3',
        '1500ms',
        'HTTP 500 from the endpoint',
      ],
    ]);

    const json = JSON.parse((await cli(['runs', 'runs-utc', '-o', 'json'])).stdout);
    expect(json.items.map((e: { id: string }) => e.id)).toEqual([triggered.id, dead]);
    expect((await cli(['runs', 'runs-utc', '--status', 'dead'])).stdout).toMatch(new RegExp(`^${dead}\\s`, 'm'));
  });

  it('cuts a long error to one line, says how to read it whole, and shows it whole with --wide and with executions get', async () => {
    await admin().tasks.create({ name: 'runs-long-error', handler: 'noop', schedule: { cron: '0 * * * *' } });
    const id = await insertDeadRun('runs-long-error', new Date('2026-03-01T10:00:00Z'));
    const error =
      'failed: cannot reach https://billing.internal/exports: connect ECONNREFUSED 10.0.0.7:443\nafter 3 attempts';
    await ctx.db.prisma.taskExecution.updateMany({ where: { id }, data: { error, result: { partial: true } } });

    const cut = await cli(['runs', 'runs-long-error']);
    const [, row] = cells(cut.stdout);
    expect(row!.at(-1)).toBe(`${error.replace(/\s+/g, ' ').slice(0, 59)}…`);
    expect(cut.stdout).toMatch(
      /^errors cut to one line: --wide shows them whole, punctual executions get <id> one with its history$/m,
    );
    const wide = await cli(['runs', 'runs-long-error', '--wide']);
    expect(wide.stdout).toContain(error);
    expect(wide.stdout).not.toContain('errors cut');

    const get = await cli(['executions', 'get', id]);
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(new RegExp(`^id: +${id}$`, 'm'));
    expect(get.stdout).toMatch(/^task: +runs-long-error$/m);
    expect(get.stdout).toMatch(/^status: +dead$/m);
    expect(get.stdout).toMatch(/^attempt: +3$/m);
    expect(get.stdout).toMatch(/^worker: +host-a:1$/m);
    // The error whole, its second line indented under the first.
    expect(get.stdout).toMatch(
      /^error: +failed: cannot reach https:\/\/billing\.internal\/exports: connect ECONNREFUSED 10\.0\.0\.7:443\n +after 3 attempts$/m,
    );
    expect(get.stdout).toMatch(/^result: +\{"partial":true\}$/m);
    expect(get.stdout).toMatch(
      /^AT +CHANGE +WORKER +DETAIL\n2026-03-01 10:00:00Z +scheduled → queued +-\n2026-03-01 10:00:01Z +running → dead +host-a:1$/m,
    );
    expect(JSON.parse((await cli(['executions', 'get', id, '-o', 'json'])).stdout)).toMatchObject({
      id,
      error,
      events: [
        { from: 'scheduled', to: 'queued' },
        { from: 'running', to: 'dead' },
      ],
    });
    const unknown = await cli(['executions', 'get', randomUUID()]);
    expect([unknown.code, unknown.stderr]).toEqual([
      1,
      expect.stringMatching(/^error: no execution with .+ \(404 not_found\)\n$/),
    ]);
  });

  it('retries a dead run and cancels a pending one by id, as the API then says', async () => {
    await admin().tasks.create({ name: 'runs-ops', handler: 'noop', schedule: { cron: '0 * * * *' } });
    const dead = await insertDeadRun('runs-ops', hoursAgo(30));
    const pending = await admin().tasks.trigger('runs-ops');
    expect(['scheduled', 'queued']).toContain(pending.status);

    const retried = await cli(['executions', 'retry', dead]);
    expect([retried.code, retried.stdout, retried.stderr]).toEqual([
      0,
      `retrying execution ${dead} of runs-ops (retrying)\n`,
      '',
    ]);
    const replayed = await admin().executions.get(dead);
    expect(replayed.status).toBe('retrying');
    expect(replayed.events.at(-1)).toMatchObject({ from: 'dead', to: 'retrying' });

    const cancelled = await cli(['executions', 'cancel', pending.id]);
    expect([cancelled.code, cancelled.stdout, cancelled.stderr]).toEqual([
      0,
      `cancelled execution ${pending.id} of runs-ops\n`,
      '',
    ]);
    expect((await admin().executions.get(pending.id)).status).toBe('cancelled');

    // What the API refuses, in one line each: a second cancel, a retry of a run that is not dead, an unknown id.
    const again = await cli(['executions', 'cancel', pending.id]);
    expect([again.code, again.stdout]).toEqual([1, '']);
    expect(again.stderr).toMatch(
      /^error: execution \S+ is cancelled; only a scheduled, queued, retrying or running execution can be cancelled \(409 invalid_state\)\n$/,
    );
    expect((await cli(['executions', 'retry', pending.id])).stderr).toMatch(
      /^error: execution \S+ is cancelled; only a dead execution can be retried \(409 invalid_state\)\n$/,
    );
    for (const id of [randomUUID(), 'not-an-id']) {
      const unknown = await cli(['executions', 'retry', id]);
      expect([unknown.code, unknown.stderr], id).toEqual([
        1,
        expect.stringMatching(/^error: no execution with .+ \(404 not_found\)\n$/),
      ]);
    }

    const json = await cli(['executions', 'cancel', dead, '-o', 'json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: dead, task: 'runs-ops', status: 'cancelled' });
    expect((await cli(['executions', 'retry'])).code).toBe(2);
  });

  it('needs the operator role: a viewer key gets the API 403 in one line and changes nothing', async () => {
    await admin().tasks.create({ name: 'runs-roles', handler: 'noop', schedule: { cron: '0 * * * *' } });
    const dead = await insertDeadRun('runs-roles', hoursAgo(30));
    const viewer = (await admin().apiKeys.create({ name: 'runs-viewer', role: 'viewer' })).key;
    const operator = (await admin().apiKeys.create({ name: 'runs-operator', role: 'operator' })).key;

    // A viewer reads the runs, ids included, and may not act on them.
    expect((await cli(['runs', 'runs-roles'], viewer)).stdout).toContain(dead);
    for (const action of ['retry', 'cancel']) {
      const refused = await cli(['executions', action, dead], viewer);
      expect([refused.code, refused.stdout], action).toEqual([1, '']);
      expect(refused.stderr, action).toBe(
        'error: the key in PUNCTUAL_API_KEY lacks the role for this (403 forbidden): this route needs the operator role; the key has viewer\n',
      );
    }
    expect((await admin().executions.get(dead)).status).toBe('dead');

    const retried = await cli(['executions', 'retry', dead], operator);
    expect([retried.code, retried.stdout]).toEqual([0, `retrying execution ${dead} of runs-roles (retrying)\n`]);
    expect((await admin().executions.get(dead)).status).toBe('retrying');
  });
});
