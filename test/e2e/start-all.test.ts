import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { freePort } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `npm start` without its build step (the test run has built): the three roles and the banner. */
function startAll(env: Record<string, string>): { child: ChildProcess; banner: Promise<string> } {
  const { NODE_ENV: _ignored, ADMIN_API_KEY: _none, ...rest } = env;
  const child = spawn(process.execPath, ['scripts/start-all.mjs'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...rest },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const banner = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner within 45 s:\n${output}`)), 45_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const at = output.indexOf('Punctual is running');
      if (
        at >= 0 &&
        output.indexOf('PUNCTUAL_API_KEY=', at) >= 0 &&
        output.indexOf('\n', output.indexOf('PUNCTUAL_API_KEY=', at)) >= 0
      ) {
        clearTimeout(timer);
        resolve(output.slice(at));
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${output}`)));
  });
  return { child, banner };
}

function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/** A non-loopback IPv4 address of this machine, if it has one. */
const outsideAddress = () =>
  Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

describe('npm start', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox();
  });
  afterAll(async () => {
    await sandbox?.dispose();
  });

  it('moves all three ports, listens on 127.0.0.1 only, and keeps its generated key across restarts with an export line', async () => {
    const keyFile = join(mkdtempSync(join(tmpdir(), 'punctual-start-')), 'dev-key');
    const [api, scheduler, worker] = [await freePort(), await freePort(), await freePort()];
    const env = {
      ...sandbox.env(),
      PORT: String(api),
      SCHEDULER_PORT: String(scheduler),
      WORKER_PORT: String(worker),
      PUNCTUAL_DEV_KEY_FILE: keyFile,
      LOG_LEVEL: 'warn',
    };

    const first = startAll(env);
    let banner: string;
    try {
      banner = await first.banner;
    } finally {
      expect(await stop(first.child)).toBe(0);
    }
    const key = /Admin key +(pk_dev_[A-Za-z0-9_-]+) +\(generated/.exec(banner)?.[1];
    expect(key, banner).toBeDefined();
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(key);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(banner).toContain(`export PUNCTUAL_URL=http://localhost:${api} PUNCTUAL_API_KEY=${key}`);

    const second = startAll(env);
    try {
      const again = await second.banner;
      expect(again).toMatch(new RegExp(`Admin key +${key} +\\(kept from the last run`));
      // Every role answers on its own port, on the loopback address…
      for (const port of [api, scheduler, worker])
        expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
      const me = await fetch(`http://127.0.0.1:${api}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
      expect(await me.json()).toMatchObject({ role: 'admin' });
      // …and on no other: a development run keeps its API to itself.
      const outside = outsideAddress();
      if (outside)
        await expect(
          fetch(`http://${outside}:${api}/health/live`, { signal: AbortSignal.timeout(2_000) }),
        ).rejects.toThrow();
    } finally {
      expect(await stop(second.child)).toBe(0);
    }
  }, 120_000);

  it('refuses a bad port with one line naming the variable', async () => {
    const run = startAll({
      ...sandbox.env(),
      SCHEDULER_PORT: 'soon',
      PUNCTUAL_DEV_KEY_FILE: join(mkdtempSync(join(tmpdir(), 'punctual-start-')), 'k'),
    });
    const refused = await run.banner.then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(refused).toContain('npm start exited (78)');
    expect(refused).toContain(
      'Invalid configuration: SCHEDULER_PORT must be a port number from 1 to 65535 (got "soon")',
    );
    await stop(run.child);
  });
});

describe('npm run build (npm start runs it first)', () => {
  it('builds nothing when nothing changed since the last build: every step is up to date and dist is left as it is', () => {
    const main = join(ROOT, 'dist/apps/api/src/main.js');
    const before = statSync(main).mtimeMs;
    const output = execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8' });
    expect(output.trim().split('\n')).toEqual([
      'build: prisma is up to date',
      'build: server is up to date',
      'build: console is up to date',
    ]);
    expect(statSync(main).mtimeMs).toBe(before);
  });
});
