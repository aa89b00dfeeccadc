import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { freePort } from '../support/processes.js';
import {
  documentationFiles,
  type FencedBlock,
  fencedBlocks,
  headingAnchors,
  markdownLinks,
  readText,
  SHELL_LANGUAGES,
} from './markdown.js';

/**
 * The docs' commands, run: every shell block of README.md and docs/ tagged `runnable` runs with bash
 * against one Punctual started as `npm start` starts it — all of them in one sequence, page after
 * page, nothing deleted in between, as a reader following the docs in order would run them (so an
 * example that breaks another page's fails here) — and every other shell block must say it is
 * `not-runnable` and why (docs/architecture.md, "Commands in the docs"). Relative links and the
 * README's length are checked here too.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARTIFACTS = join(ROOT, 'test/artifacts/docs');
const README_MAX_LINES = 250;
const BLOCK_TIMEOUT_MS = 120_000;

const files = documentationFiles(ROOT);
const texts = new Map(files.map((file) => [file, readText(ROOT, file)]));
const blocks = files.flatMap((file) => fencedBlocks(file, texts.get(file)!));
const runnable = blocks.filter((block) => block.tag.kind === 'runnable');
const where = (block: FencedBlock) => `${block.file}:${block.line}`;

interface BlockRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Calls the started system's API with the admin key. */
type Api = (method: string, path: string) => Promise<{ status: number; body: any }>;

/** What a block with an `id` says will happen, checked after it ran (its exit code is checked first). */
const outcomes: Record<string, (run: BlockRun, api: Api) => Promise<void>> = {
  // README "A first task": the task ran every second, its runs are listed, and deleting it kept them.
  'first-task': async (run, api) => {
    expect(run.stdout).toContain('"status":"succeeded"');
    expect(run.stdout).toContain('"events"');
    expect((await api('GET', '/v1/tasks/hello')).status).toBe(404);
    const history = await api('GET', '/v1/tasks/hello/executions?limit=50');
    expect(history.status).toBe(200);
    expect(
      history.body.items.filter((e: { status: string }) => e.status === 'succeeded').length,
    ).toBeGreaterThanOrEqual(1);
  },
  calendar: async (_run, api) => {
    const calendar = await api('GET', '/v1/calendars/ny-office-closed');
    expect(calendar.status).toBe(200);
    expect(calendar.body).toMatchObject({
      timezone: 'America/New_York',
      dates: ['2026-12-25', '2027-01-01'],
      rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4'],
      managedBy: null,
    });
    // The calendar the CLI page applied from examples/tasks.yaml is still its manager's.
    expect((await api('GET', '/v1/calendars/us-holidays')).body).toMatchObject({ managedBy: 'example-repo' });
  },
  // The DST example: the 02:30 of the night the clocks go forward runs at 03:30.
  // Four days around now of a task at 09:00 on weekdays in its zone: each slot one line with its outcome and the reason for it.
  timeline: async (run) => {
    const items = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { local: string; outcome: string; reason: string | null; detail: string });
    // Weekdays at 09:00: two days either side of now hold at least one.
    expect(items.length).toBeGreaterThanOrEqual(1);
    expect(items.every((i) => i.detail.length > 0 && /^\d{4}-\d\d-\d\dT09:00:00\.000\+0[12]:00$/.test(i.local))).toBe(
      true,
    );
    // Created minutes ago: its earlier slots were before it existed.
    expect(items.filter((i) => i.outcome === 'not_planned').every((i) => i.reason === 'before_created')).toBe(true);
    expect(items.filter((i) => i.reason === 'unrecorded')).toEqual([]);
  },
  preview: async (run) => {
    const { fireTimes } = JSON.parse(run.stdout) as { fireTimes: { local: string }[] };
    expect(fireTimes.map((t) => t.local)).toEqual([
      '2027-03-26T02:30:00.000+01:00',
      '2027-03-27T02:30:00.000+01:00',
      '2027-03-28T03:30:00.000+02:00',
      '2027-03-29T02:30:00.000+02:00',
    ]);
  },
  'cli-tasks': async (run, api) => {
    expect(run.stdout).toContain('paused nightly-report');
    expect(run.stdout).toContain('resumed nightly-report');
    expect(run.stdout).toMatch(/^VERSION +CHANGED \(UTC\) +ACTION +BY/m);
    expect(run.stdout).toContain('rolling nightly-report back to version 1 would:');
    expect(run.stdout).toMatch(/excluded by: +1\n +ledger-close/);
    expect((await api('GET', '/v1/tasks/nightly-report')).body).toMatchObject({
      status: 'active',
      managedBy: 'example-repo',
    });
    expect((await api('GET', '/v1/tasks/migration-cutover')).status).toBe(404);
    const runs = await api('GET', '/v1/tasks/ledger-close/executions?limit=10');
    expect(runs.body.items.some((e: { trigger: string }) => e.trigger === 'manual')).toBe(true);
  },
  // The dead run was replayed (a second attempt), the run waiting an hour between attempts was cancelled.
  'cli-runs': async (run, api) => {
    expect(run.stdout).toMatch(/retrying execution [0-9a-f-]{36} of flaky-export/);
    // `executions get` prints the run whole: the error uncut, then its history.
    expect(run.stdout).toMatch(/^error: +.*exports\.punctual-demo\.invalid/m);
    expect(run.stdout).toMatch(/^AT +CHANGE +WORKER +DETAIL$/m);
    const flaky = await api('GET', '/v1/tasks/flaky-export/executions?limit=10');
    expect(flaky.body.items.some((e: { attempt: number }) => e.attempt >= 2)).toBe(true);
    const patient = await api('GET', '/v1/tasks/patient-export/executions?limit=10');
    expect(patient.body.items.map((e: { status: string }) => e.status)).toContain('cancelled');
  },
  apply: async (run, api) => {
    expect(run.stdout).toContain('(dry run: nothing was changed)');
    expect(run.stdout).toMatch(/^tasks: 0 changed \(0 created, 0 updated, 0 deleted\), 5 unchanged$/m);
    const managed = await api('GET', '/v1/tasks?managedBy=example-repo&limit=100');
    expect(managed.body.items.map((t: { name: string }) => t.name).sort()).toEqual([
      'cache-warmer',
      'ledger-close',
      'migration-cutover',
      'monthly-invoices',
      'nightly-report',
    ]);
  },
  retry: async (run, api) => {
    const runs = await api('GET', '/v1/tasks/flaky/executions?limit=10');
    expect(runs.body.items[0]).toMatchObject({ trigger: 'manual', status: 'dead', attempt: 2 });
    expect(run.stdout).toContain('"to": "retrying"');
  },
  kustomize: async (run) => {
    expect(run.stdout).toMatch(/^ +3 kind: Deployment$/m);
    expect(run.stdout).toMatch(/^ +1 kind: Job$/m);
    expect(run.stdout).toContain('LOG_LEVEL: debug');
  },
  metrics: async (run) => {
    expect(run.stdout).toContain('"leader":true');
    expect(run.stdout).toMatch(/^punctual_leader\{shard="0"\} 1$/m);
  },
  // The first look shows a leader and a live worker with the built-in handlers.
  triage: async (run) => {
    expect(run.stdout).toMatch(/"leader": \{\n\s+"instance": "[^"]+",\n\s+"epoch": 1,/);
    expect(run.stdout).toMatch(/"handlers": \[\n\s+"http",\n\s+"log",\n\s+"noop"\n\s+\]/);
  },
};

describe('the docs', () => {
  it(`keep the README at most ${README_MAX_LINES} lines`, () => {
    expect(texts.get('README.md')!.trimEnd().split('\n').length).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('give every fenced block a language, and every shell block a runnable or not-runnable tag', () => {
    const problems = blocks.flatMap((block) => {
      if (!block.language) return [`${where(block)}: a fenced block without a language (output is \`text\`)`];
      if (block.tag.kind === 'malformed') return [`${where(block)}: ${block.tag.problem}`];
      if (SHELL_LANGUAGES.has(block.language) && block.tag.kind === 'untagged') {
        return [
          `${where(block)}: \`\`\`${block.info} — say \`${block.language} runnable\` or \`${block.language} not-runnable <why>\``,
        ];
      }
      return [];
    });
    expect(problems).toEqual([]);
    expect(runnable.length).toBeGreaterThan(0);
  });

  it('check the outcome of every block id they name, and name every id checked once', () => {
    const ids = runnable
      .map((block) => (block.tag.kind === 'runnable' ? block.tag.id : undefined))
      .filter((id): id is string => id !== undefined);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(Object.keys(outcomes).filter((id) => !ids.includes(id))).toEqual([]);
    expect(ids.filter((id) => !(id in outcomes))).toEqual([]);
  });

  it('link only to files and headings that exist', () => {
    const broken = files.flatMap((file) =>
      markdownLinks(file, texts.get(file)!).flatMap((link) => {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return [];
        const [path = '', anchor] = link.target.split('#', 2);
        const target = path ? resolve(ROOT, dirname(file), decodeURIComponent(path)) : resolve(ROOT, file);
        if (!existsSync(target)) return [`${file}:${link.line}: ${link.target} — no such file`];
        if (anchor === undefined) return [];
        if (!target.endsWith('.md'))
          return [`${file}:${link.line}: ${link.target} — an anchor into a file that is not Markdown`];
        const text = texts.get(target.slice(ROOT.length)) ?? readText(ROOT, target.slice(ROOT.length));
        return headingAnchors(text).has(anchor)
          ? []
          : [`${file}:${link.line}: ${link.target} — no heading with that anchor`];
      }),
    );
    expect(broken).toEqual([]);
  });
});

describe('the docs’ runnable blocks, against a running Punctual', () => {
  let sandbox: Sandbox;
  let system: ChildProcess | undefined;
  let env: Record<string, string>;
  let api: Api;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    sandbox = await createSandbox();
    const ports = { PORT: await freePort(), SCHEDULER_PORT: await freePort(), WORKER_PORT: await freePort() };
    const started = startSystem({
      ...withoutKeys(sandbox.env()),
      PORT: String(ports.PORT),
      SCHEDULER_PORT: String(ports.SCHEDULER_PORT),
      WORKER_PORT: String(ports.WORKER_PORT),
      PUNCTUAL_DEV_KEY_FILE: join(mkdtempSync(join(tmpdir(), 'punctual-docs-')), 'dev-key'),
      LOG_LEVEL: 'warn',
    });
    system = started.child;
    const banner = await started.banner;
    // Exactly what a reader pastes: the banner's own export line.
    const exported = /export PUNCTUAL_URL=(\S+) PUNCTUAL_API_KEY=(\S+)/.exec(banner);
    if (!exported) throw new Error(`no export line in the banner:\n${banner}`);
    const [, url, key] = exported as unknown as [string, string, string];
    env = {
      PATH: `${readersCommands()}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? tmpdir(),
      TMPDIR: process.env.TMPDIR ?? tmpdir(),
      LANG: process.env.LANG ?? 'C.UTF-8',
      PUNCTUAL_URL: url,
      PUNCTUAL_API_KEY: key,
      SCHEDULER_PORT: String(ports.SCHEDULER_PORT),
      WORKER_PORT: String(ports.WORKER_PORT),
    };
    api = async (method, path) => {
      const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
  }, 120_000);

  afterAll(async () => {
    if (system) await stopSystem(system);
    await sandbox?.dispose();
  }, 60_000);

  for (const block of runnable) {
    const tag = block.tag as { kind: 'runnable'; id?: string; requires: string[] };
    it(
      `${where(block)}${tag.id ? ` (${tag.id})` : ''} runs`,
      async (ctx) => {
        const missing = tag.requires.filter(
          (command) => spawnSync('bash', ['-c', `command -v ${command}`]).status !== 0,
        );
        if (missing.length) return ctx.skip(`${missing.join(', ')} not installed here`);
        const run = await runBlock(block, env);
        writeFileSync(
          join(ARTIFACTS, `${block.file.replace(/\W+/g, '_')}-${block.line}.log`),
          `${block.code}\n\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n--- exit ${run.code}\n`,
        );
        expect(
          run.code,
          `${where(block)} exited ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`,
        ).toBe(0);
        if (tag.id) await outcomes[tag.id]!(run, api);
      },
      BLOCK_TIMEOUT_MS + 30_000,
    );
  }
});

/**
 * The sandbox's settings as a user's `npm start` has them: no key or environment (it generates its
 * development key) and no test handlers (the docs' demos use only http, log and noop).
 */
function withoutKeys(env: Record<string, string>): Record<string, string> {
  const { NODE_ENV: _env, ADMIN_API_KEY: _key, ENABLE_TEST_HANDLERS: _test, ...rest } = env;
  return rest;
}

/** `npm start` without its build step (the test run has built): the three roles and their banner. */
function startSystem(env: Record<string, string>): { child: ChildProcess; banner: Promise<string> } {
  const child = spawn(process.execPath, ['scripts/start-all.mjs'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so that a stop that must force it takes the three roles with it.
    detached: true,
  });
  let output = '';
  const log = createWriteStream(join(ARTIFACTS, 'system.log'));
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => log.write(chunk));
  const banner = new Promise<string>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner within 90 s:\n${output}`)), 90_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const at = output.indexOf('Punctual is running');
      const exported = output.indexOf('PUNCTUAL_API_KEY=', at);
      if (at >= 0 && exported >= 0 && output.indexOf('\n', exported) >= 0) {
        clearTimeout(timer);
        resolvePromise(output.slice(at));
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code}):\n${output}`));
    });
  });
  banner.catch(() => undefined);
  return { child, banner };
}

async function stopSystem(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolvePromise) => child.once('exit', () => resolvePromise()));
  child.kill('SIGTERM');
  const forced = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, 30_000);
  await exited;
  clearTimeout(forced);
}

/**
 * A directory first on the blocks' PATH, so that the docs' lines stay as a reader types them:
 * - a `curl` that fails on an HTTP error status (`--fail-with-body`): a refused request still fails
 *   its block;
 * - an `npx` that runs `npx punctual …` as npx does in this checkout — the package's own bin
 *   (package.json `bin`), built — without npm's start-up for each of the docs' ~50 CLI lines
 *   (seconds each on a busy machine); any other `npx` line goes to the real npx.
 */
function readersCommands(): string {
  const which = (command: string) => {
    const found = spawnSync('bash', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
    if (!found) throw new Error(`${command} is not installed`);
    return found;
  };
  const bin = (JSON.parse(readText(ROOT, 'package.json')) as { bin: Record<string, string> }).bin.punctual!;
  const dir = mkdtempSync(join(tmpdir(), 'punctual-docs-bin-'));
  writeFileSync(join(dir, 'curl'), `#!/bin/sh\nexec ${JSON.stringify(which('curl'))} --fail-with-body "$@"\n`);
  writeFileSync(
    join(dir, 'npx'),
    `#!/bin/sh\nif [ "$1" = punctual ]; then shift; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, bin))} "$@"; fi\n` +
      `exec ${JSON.stringify(which('npx'))} "$@"\n`,
  );
  for (const command of ['curl', 'npx']) chmodSync(join(dir, command), 0o755);
  return dir;
}

/** A block's commands (`console` blocks: the lines after a `$ ` prompt), run by bash from the root. */
function runBlock(block: FencedBlock, env: Record<string, string>): Promise<BlockRun> {
  const script =
    block.language === 'console'
      ? block.code
          .split('\n')
          .filter((line) => line.startsWith('$ '))
          .map((line) => line.slice(2))
          .join('\n')
      : block.code;
  return new Promise((resolvePromise, reject) => {
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${BLOCK_TIMEOUT_MS} ms)`;
      process.kill(-child.pid!, 'SIGKILL');
    }, BLOCK_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}
