import { PunctualClient } from '@punctual/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { ensureCliBuilt, runCli } from './run-cli.js';

describe('punctual tasks history and rollback', () => {
  const ctx = useApiSandbox();
  const admin = () => new PunctualClient({ baseUrl: ctx.api.base, apiKey: ctx.api.config.adminApiKey });
  const cli = (args: string[]) =>
    runCli(args, { PUNCTUAL_URL: ctx.api.base, PUNCTUAL_API_KEY: ctx.api.config.adminApiKey });
  beforeAll(() => ensureCliBuilt(), 300_000);

  it('lists the versions with what each changed, previews a rollback, then makes it', async () => {
    await admin().tasks.create({
      name: 'hist-report',
      handler: 'noop',
      schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
    });
    await admin().tasks.patch('hist-report', { schedule: { cron: '0 15 * * *' } });

    const history = await cli(['tasks', 'history', 'hist-report']);
    expect(history.code, history.stderr).toBe(0);
    const lines = history.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^VERSION\s+CHANGED \(UTC\)\s+ACTION\s+BY\s+REASON\s+CHANGES/);
    expect(lines[1]).toMatch(
      /^2\*\s+\S+ \S+\s+update\s+admin-api-key\s+-\s+schedule\.cron: "0 9 \* \* \*" → "0 15 \* \* \*"/,
    );
    expect(lines[2]).toMatch(/^1\s+\S+ \S+\s+create\s+admin-api-key/);

    const dry = await cli(['tasks', 'rollback', 'hist-report', '--to', '1', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('rolling hist-report back to version 1 would:');
    expect(dry.stdout).toMatch(/move \S+T15:00:00\.000\+0[12]:00 → \S+T09:00:00\.000\+0[12]:00/);
    expect((await admin().tasks.get('hist-report')).schedule.cron).toBe('0 15 * * *');

    const done = await cli(['tasks', 'rollback', 'hist-report', '--to', '1', '--reason', 'back to mornings']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('hist-report is now version 3, equal to version 1');
    expect((await admin().tasks.get('hist-report')).schedule.cron).toBe('0 9 * * *');
    expect((await cli(['tasks', 'rollback', 'hist-report', '--to', '9'])).code).toBe(1);
  });
});
