import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep, waitFor } from '../support/processes.js';
import { deleteKeys } from '../support/sandbox.js';

const ROOT = join(import.meta.dirname, '../..');
const LEASE_MS = 2_000;

/** examples/nest-app, copied out of the tree and installed as a user would: from the packed tarballs. */
function installExample(): string {
  execFileSync(process.execPath, [join(ROOT, 'scripts/pack.mjs')], { cwd: ROOT, stdio: 'pipe' });
  const dir = mkdtempSync(join(tmpdir(), 'punctual-nest-app-'));
  cpSync(join(ROOT, 'examples/nest-app'), dir, {
    recursive: true,
    filter: (path) => !/node_modules|dist/.test(path.slice(ROOT.length)),
  });
  const manifest = readFileSync(join(dir, 'package.json'), 'utf8').replaceAll(
    'file:../../.packs/',
    `file:${join(ROOT, '.packs')}/`,
  );
  writeFileSync(join(dir, 'package.json'), manifest);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd: dir,
    stdio: 'pipe',
  });
  execFileSync(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    cwd: dir,
    stdio: 'pipe',
  });
  return dir;
}

/** Runs a command to its end without blocking the event loop: its exit status and output. */
function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ status: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The example app as a process: its own Nest app, configured through its ConfigService. */
class ExampleApp {
  output = '';
  readonly exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    for (const stream of [child.stdout!, child.stderr!])
      stream.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }
  static start(dir: string, env: Record<string, string>): ExampleApp {
    return new ExampleApp(
      spawn(process.execPath, ['dist/main.js'], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
  }
}

/**
 * A user's Nest app runs Punctual's executions with its own handler (DESIGN §5 worker protocol):
 * `examples/nest-app`, installed from `npm pack` tarballs, against a real scheduler and API. Every
 * count is of webhook calls the handler makes through the app's injected service.
 */
describe('your handlers in your own Nest app (examples/nest-app, from packed tarballs)', () => {
  let cluster: Cluster;
  let dir: string;
  let app: ExampleApp;
  const start = () => {
    app = ExampleApp.start(dir, {
      ...cluster.sandbox.env(),
      GREETING: 'Bonjour',
      LEASE_MS: String(LEASE_MS),
      WORKER_CONCURRENCY: '4',
    });
    return app;
  };
  const worker = async () =>
    (await cluster.call('GET', '/v1/cluster')).body.workers?.some?.((w: { handlers?: string[] }) =>
      w.handlers?.includes('send-greeting'),
    );
  const oneOff = async (name: string, webhook: string, policy?: object) => {
    const at = new Date(Date.now() + 1_500).toISOString();
    expect(
      (
        await cluster.call('POST', '/v1/tasks', {
          name,
          handler: 'send-greeting',
          payload: { to: name, webhook },
          schedule: { at },
          policy,
        })
      ).status,
    ).toBe(201);
    return cluster.waitFor(async () => (await cluster.executionsOf(name))[0], 10_000, `${name}'s execution`);
  };
  /** Jobs of the app's handler the built-in worker took and moved on (its metrics): none, ever. */
  const moved = async () =>
    Number(
      /^punctual_runs_moved_total\{handler="send-greeting"\} (\d+)/m.exec(
        await (await fetch(`${cluster.workers[0]!.url}/metrics`)).text(),
      )?.[1] ?? 0,
    );
  const finished = (name: string) =>
    cluster.waitFor(
      async () => (await cluster.executionsOf(name)).find((e) => ['succeeded', 'dead'].includes(e.status)),
      30_000,
      `${name} to finish`,
    );

  beforeAll(async () => {
    dir = installExample();
    // Beside the built-in worker, as `npm start` runs it: each takes jobs only from the queues of the
    // handlers it offers, so the built-in worker never takes a run of the app's handler.
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
    start();
    await waitFor(worker, 30_000, `the example app to join the cluster:\n${app.output}`);
  }, 300_000);
  afterAll(async () => {
    app?.child.kill('SIGKILL');
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs an every-second task's slots once each with the app's handler and its injected services", async () => {
    // The app's own deploy step declares the task with @punctual/client.
    const env = {
      PATH: process.env.PATH ?? '',
      PUNCTUAL_URL: cluster.api!.url,
      PUNCTUAL_API_KEY: cluster.sandbox.env().ADMIN_API_KEY!,
      GREET_WEBHOOK: cluster.invocations.url(),
    };
    expect(execFileSync(process.execPath, ['dist/declare-task.js'], { cwd: dir, env, encoding: 'utf8' })).toBe(
      'task greet declared, version 1\n',
    );
    const rows = await cluster.runsUntilPaused('greet', 5, 30_000);
    const calls = cluster.invocations.succeededBy();
    const problems = rows
      .filter((row) => row.status !== 'succeeded' || calls.get(row.id) !== 1)
      .map((row) => `${row.scheduled_for.toISOString()}: ${row.status}, ${calls.get(row.id) ?? 0} call(s)`);
    expect(problems).toEqual([]);
    expect(rows.length).toBeGreaterThanOrEqual(5);
    // Routed, not bounced: every run went straight to the app — the built-in worker beside it took none.
    expect(new Set(rows.map((r) => r.worker_id))).not.toContain(cluster.workers[0]!.instanceId);
    expect(await moved()).toBe(0);
    // The result is the handler's return value: the greeting composed by the app's service, from the app's config.
    const { body } = await cluster.call('GET', `/v1/executions/${rows[0]!.id}`);
    expect(body.result).toEqual({ text: 'Bonjour, Ada!', status: 200 });
    await cluster.call('DELETE', '/v1/tasks/greet');
  });

  it('retries a failed attempt: one failed call, then one that succeeds', async () => {
    // The default policy but for its 30 s backoff.
    const execution = await oneOff('greet-retry', cluster.invocations.url({ failFirst: 1 }), {
      retry: { backoff: '1s' },
    });
    const done = await finished('greet-retry');
    expect(done).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(cluster.invocations.calls.filter((c) => c.executionId === execution.id).map((c) => c.status)).toEqual([
      500, 200,
    ]);
  });

  it('keeps its lease while a handler runs longer than LEASE_MS: one attempt, one call', async () => {
    const execution = await oneOff('greet-long', cluster.invocations.url({ delay: LEASE_MS * 3 }));
    const done = await finished('greet-long');
    expect(done).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect(cluster.invocations.callsBy().get(execution.id)).toBe(1);
  });

  it('kill -9 of the only worker offering the handler: its runs wait in its queue — the built-in worker takes none — none ends dead, and once the app is back every slot ends once', async () => {
    const webhook = cluster.invocations.url();
    expect(
      (
        await cluster.call('POST', '/v1/tasks', {
          name: 'greet-kill',
          handler: 'send-greeting',
          payload: { to: 'Kill', webhook },
          schedule: { cron: '* * * * * *' },
        })
      ).status,
    ).toBe(201);
    await cluster.waitFor(
      async () => (await cluster.executionsOf('greet-kill')).filter((e) => e.status === 'succeeded').length >= 2,
      15_000,
      'two runs before the kill',
    );

    app.child.kill('SIGKILL');
    await app.exited;
    const killedAt = Date.now();
    // Down for three slots at least: each due, waiting in the queue of the app's handler, which no live worker takes from.
    const down = await cluster.waitFor(
      async () => {
        const due = (await cluster.executionsOf('greet-kill')).filter(
          (e) => e.scheduled_for.getTime() > killedAt && e.scheduled_for.getTime() < Date.now() - 500,
        );
        return due.length >= 3 && due;
      },
      15_000,
      'three slots due while the app is down',
    );
    expect(down.map((e) => e.status).filter((status) => status !== 'scheduled' && status !== 'queued')).toEqual([]);

    start();
    // Until the slots of the downtime and two more after it have succeeded.
    const rows = await cluster.runsUntilPaused(
      'greet-kill',
      (await cluster.executionsOf('greet-kill')).length + 2,
      60_000,
    );
    // Every slot accounted for (DESIGN §1): one row per second, each ended, none dead for want of a handler.
    const seconds = (rows.at(-1)!.scheduled_for.getTime() - rows[0]!.scheduled_for.getTime()) / 1000 + 1;
    expect(rows).toHaveLength(seconds);
    expect(
      rows
        .filter((r) => !['succeeded', 'skipped'].includes(r.status))
        .map((r) => `${r.scheduled_for.toISOString()} ${r.status} ${r.error ?? ''}`),
    ).toEqual([]);
    // Counted at the webhook: a succeeded slot called it once, a skipped one never. The one
    // attempt a kill may cut after its call (retried once its lease ends) is the documented edge.
    const calls = cluster.invocations.succeededBy();
    const wrong = rows.filter((r) =>
      r.status === 'succeeded'
        ? (calls.get(r.id) ?? 0) !== 1 && !(r.attempt > 1 && calls.get(r.id) === 2)
        : calls.has(r.id),
    );
    expect(
      wrong.map(
        (r) => `${r.scheduled_for.toISOString()} ${r.status} attempt ${r.attempt}: ${calls.get(r.id) ?? 0} call(s)`,
      ),
    ).toEqual([]);
    expect(await moved()).toBe(0);
    console.log(
      `greet-kill: ${rows.length} slots ${JSON.stringify(Object.fromEntries(['succeeded', 'skipped'].map((s) => [s, rows.filter((r) => r.status === s).length])))}, none taken by the built-in worker`,
    );
    await cluster.call('DELETE', '/v1/tasks/greet-kill');
    await waitFor(worker, 30_000, `the example app to join the cluster again:\n${app.output}`);
  });

  it(
    'Redis emptied (every key of the cluster deleted, as FLUSHALL does), then the app stopped with ' +
      'SIGTERM and started again: runs of its handler wait for it — none ends dead — and every slot runs ' +
      'once',
    async () => {
      const webhook = cluster.invocations.url();
      expect(
        (
          await cluster.call('POST', '/v1/tasks', {
            name: 'greet-wait',
            handler: 'send-greeting',
            payload: { to: 'Wait', webhook },
            schedule: { cron: '* * * * * *' },
          })
        ).status,
      ).toBe(201);
      await cluster.waitFor(
        async () => (await cluster.executionsOf('greet-wait')).filter((e) => e.status === 'succeeded').length >= 2,
        15_000,
        'two runs first',
      );
      // The worker directory is gone with everything else: until the workers announce again, no
      // live worker seems to offer the app's handler — the built-in worker must not end its runs dead.
      await deleteKeys(cluster.sandbox.redisPrefix);
      const flushedAt = Date.now();
      await cluster.waitFor(
        async () =>
          (await cluster.executionsOf('greet-wait')).filter(
            (e) => e.status === 'succeeded' && e.scheduled_for.getTime() > flushedAt + 2_000,
          ).length >= 2,
        30_000,
        'runs after the flush',
      );
      // A clean stop: the app withdraws its entry, and the slots due meanwhile wait for it.
      app.child.kill('SIGTERM');
      expect(await app.exited).toBe(0);
      const stoppedAt = Date.now();
      await sleep(4_000);
      const down = (await cluster.executionsOf('greet-wait')).filter(
        (e) => e.scheduled_for.getTime() > stoppedAt && e.scheduled_for.getTime() < Date.now() - 500,
      );
      expect(down.length).toBeGreaterThanOrEqual(3);
      expect(down.map((e) => e.status).filter((status) => !['scheduled', 'queued'].includes(status))).toEqual([]);
      start();
      const rows = await cluster.runsUntilPaused(
        'greet-wait',
        (await cluster.executionsOf('greet-wait')).length + 2,
        60_000,
      );
      const seconds = (rows.at(-1)!.scheduled_for.getTime() - rows[0]!.scheduled_for.getTime()) / 1000 + 1;
      expect(rows).toHaveLength(seconds);
      expect(
        rows
          .filter((r) => !['succeeded', 'skipped'].includes(r.status))
          .map((r) => `${r.scheduled_for.toISOString()} ${r.status} ${r.error ?? ''}`),
      ).toEqual([]);
      // Counted at the webhook: each succeeded slot called it once, a skipped one never.
      const calls = cluster.invocations.succeededBy();
      const wrong = rows.filter((r) => (r.status === 'succeeded' ? calls.get(r.id) !== 1 : calls.has(r.id)));
      expect(wrong.map((r) => `${r.scheduled_for.toISOString()} ${r.status}: ${calls.get(r.id) ?? 0} call(s)`)).toEqual(
        [],
      );
      console.log(
        `greet-wait: ${rows.length} slots ${JSON.stringify(Object.fromEntries(['succeeded', 'skipped'].map((s) => [s, rows.filter((r) => r.status === s).length])))}, none dead`,
      );
      await cluster.call('DELETE', '/v1/tasks/greet-wait');
      await waitFor(worker, 30_000, `the example app to join the cluster again:\n${app.output}`);
    },
  );

  it('the worker package installs into a plain Node project with no warning, given the lines docs/handlers.md states', async () => {
    const plain = mkdtempSync(join(tmpdir(), 'punctual-plain-'));
    try {
      // What docs/handlers.md ("On Node 20") tells a plain Node project to carry: nothing else.
      const manifest = {
        name: 'plain-app',
        private: true,
        type: 'module',
        dependencies: {
          '@punctual/worker': `file:${join(ROOT, '.packs/punctual-worker-0.1.0.tgz')}`,
          '@punctual/contract': `file:${join(ROOT, '.packs/punctual-contract-0.1.0.tgz')}`,
        },
        overrides: { 'file-type': '21.3.4' },
        allowScripts: { 'msgpackr-extract': false, protobufjs: false },
      };
      writeFileSync(join(plain, 'package.json'), JSON.stringify(manifest, null, 2));
      // Not spawnSync: a blocked event loop lets the API's idle keep-alive sockets close unseen, and the next call fails.
      const install = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], plain);
      expect(install.status, install.stderr).toBe(0);
      expect(install.stderr.split('\n').filter((line) => /warn/i.test(line))).toEqual([]);
      const loaded = execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "const m = await import('@punctual/worker'); console.log(typeof m.createWorker, typeof m.PunctualWorkerModule)",
        ],
        { cwd: plain, encoding: 'utf8' },
      );
      expect(loaded.trim()).toBe('function function');
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });

  it('an npm install in the example leaves no lock file for git to pick up (it names the tarballs of one build)', () => {
    expect(
      execFileSync('git', ['check-ignore', 'examples/nest-app/package-lock.json'], {
        cwd: ROOT,
        encoding: 'utf8',
      }).trim(),
    ).toBe('examples/nest-app/package-lock.json');
  });

  it('on SIGTERM lets the running handler finish, then exits 0', async () => {
    const execution = await oneOff('greet-drain', cluster.invocations.url({ delay: 2_000 }));
    const call = await cluster.waitFor(
      async () => cluster.invocations.calls.find((c) => c.executionId === execution.id),
      15_000,
      'the handler to call',
    );
    app.child.kill('SIGTERM');
    expect(await app.exited).toBe(0);
    expect(call).toMatchObject({ aborted: false, status: 200 });
    expect(call.endedAt).not.toBeNull();
    expect(await finished('greet-drain')).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect(cluster.invocations.callsBy().get(execution.id)).toBe(1);
  });
});
