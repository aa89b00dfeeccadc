import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function run(app: string, env: Record<string, string>) {
  const result = spawnSync(process.execPath, [`${ROOT}dist/apps/${app}/src/main.js`], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, stderr: result.stderr.trim(), stdout: result.stdout };
}

describe('start-up refusals', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox();
  });
  afterAll(async () => {
    await sandbox?.dispose();
  });

  it.each(['api', 'scheduler', 'worker'])('%s stops on a bad value with one line naming the variable', (app) => {
    const { code, stderr } = run(app, { ...sandbox.env(), LEASE_MS: 'soon' });
    expect(code).toBe(78);
    expect(stderr).toBe('Invalid configuration: LEASE_MS must be a whole number (got "soon")');
  });

  it('the API refuses to start in production without any API key', () => {
    const { code, stderr } = run('api', { ...sandbox.env({ NODE_ENV: 'production', PORT: '0' }), ADMIN_API_KEY: '' });
    expect(code).toBe(78);
    // One line, as for a bad variable: the check needs Postgres, so it runs while the app starts.
    expect(stderr).toBe(
      'Invalid configuration: ADMIN_API_KEY is required (no API key exists) unless NODE_ENV=development',
    );
  });
});
