import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../libs/config/src/index.js';
import { UnrecoverableError } from '../../libs/handlers/src/index.js';
import { createWorker, PunctualWorkerModule, type PunctualWorker, workerConfig } from '../../libs/worker/src/index.js';
import { Cluster } from '../support/cluster.js';
import { REDIS_URL } from '../support/env.js';
import { sleep } from '../support/processes.js';

const ROOT = join(import.meta.dirname, '../..');

/** A worker without Nest in sight: `createWorker({ handlers })` in this process, against a real scheduler and API. */
describe('createWorker: handlers as functions, in a plain Node process', () => {
  let cluster: Cluster;
  let worker: PunctualWorker | undefined;
  const calls: { execution: string; attempt: number; to: unknown }[] = [];

  beforeAll(async () => {
    // Beside a built-in worker, which lacks plain-greet: it never takes this worker's runs (a queue per handler).
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
    const { databaseUrl, redisPrefix } = cluster.sandbox;
    worker = await createWorker({
      databaseUrl,
      redisUrl: cluster.sandbox.env().REDIS_URL!,
      redisPrefix,
      concurrency: 2,
      instanceId: 'plain-node',
      logger: { log: () => undefined, warn: () => undefined, error: (m: unknown) => console.error(m) },
      handlers: {
        'plain-greet': async ({ payload, execution, attempt }) => {
          const { to } = payload as { to: string };
          calls.push({ execution: execution.id, attempt, to });
          if (to === 'nobody') throw new UnrecoverableError('nobody to greet');
          // Text Postgres cannot store as it is: a NUL, and half of a character (a cut emoji).
          if (to === 'bytes') return { text: 'a\u0000b \ud83d', [`k\u0000`]: 1 };
          if (to === 'bad bytes') throw new UnrecoverableError('failed with \u0000 and \ud83d');
          return { greeted: to };
        },
      },
    });
  });
  afterAll(async () => {
    await worker?.close();
    await cluster?.stop();
  });

  const workers = async () =>
    (await cluster.call('GET', '/v1/cluster')).body.workers as {
      instance: string;
      handlers: string[];
      concurrency: number | null;
    }[];

  it('announces its handlers — its own only, no built-in one unless asked — runs each slot of an every-second task once, and records the return value', async () => {
    const me = await cluster.waitFor(
      async () =>
        (await workers()).find(
          (w) => w.instance === 'plain-node' && w.handlers.includes('plain-greet') && w.concurrency === 2,
        ),
      15_000,
      'the worker in the cluster view',
    );
    expect(me.handlers).toEqual(['plain-greet']);
    expect(
      (
        await cluster.call('POST', '/v1/tasks', {
          name: 'plain',
          handler: 'plain-greet',
          payload: { to: 'Grace' },
          schedule: { cron: '* * * * * *' },
        })
      ).status,
    ).toBe(201);
    const rows = await cluster.runsUntilPaused('plain', 3, 20_000);
    const runs = (id: string) => calls.filter((c) => c.execution === id).length;
    expect(rows.map((r) => `${r.status} ${runs(r.id)}`)).toEqual(rows.map(() => 'succeeded 1'));
    expect((await cluster.call('GET', `/v1/executions/${rows[0]!.id}`)).body.result).toEqual({ greeted: 'Grace' });
  });

  it('a result or an error holding a NUL or half a character is stored, those made U+FFFD: written once, the handler not run again', async () => {
    for (const [name, to] of [
      ['plain-bytes', 'bytes'],
      ['plain-bad-bytes', 'bad bytes'],
    ]) {
      await cluster.call('POST', '/v1/tasks', {
        name,
        handler: 'plain-greet',
        payload: { to },
        schedule: { at: new Date(Date.now() + 1_000).toISOString() },
      });
    }
    const ended = async (name: string) =>
      cluster.waitFor(
        async () => (await cluster.executionsOf(name)).find((e) => e.status === 'succeeded' || e.status === 'dead'),
        15_000,
        `${name} to end`,
      );
    const [ok, failed] = [await ended('plain-bytes'), await ended('plain-bad-bytes')];
    expect((await cluster.call('GET', `/v1/executions/${ok.id}`)).body).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      result: { text: 'a\uFFFDb \uFFFD', 'k\uFFFD': 1 },
    });
    expect(failed).toMatchObject({
      status: 'dead',
      attempt: 1,
      error: 'UnrecoverableError: failed with \uFFFD and \uFFFD',
    });
    // Each handler ran once: the write did not fail and leave the lease to lapse into a second run.
    expect([ok.id, failed.id].map((id) => calls.filter((c) => c.execution === id).length)).toEqual([1, 1]);
  });

  it('an UnrecoverableError from a function handler ends the execution dead, after one attempt', async () => {
    await cluster.call('POST', '/v1/tasks', {
      name: 'plain-dead',
      handler: 'plain-greet',
      payload: { to: 'nobody' },
      schedule: { at: new Date(Date.now() + 1_000).toISOString() },
    });
    const dead = await cluster.waitFor(
      async () => (await cluster.executionsOf('plain-dead')).find((e) => e.status === 'dead'),
      15_000,
      'dead',
    );
    expect(dead).toMatchObject({ attempt: 1, error: expect.stringMatching(/nobody to greet/) });
  });

  it('a run whose handler no live worker offers waits for one — listed in the cluster view, never ended dead — until its maxDelay makes it late: then its misfire policy decides', async () => {
    await cluster.call('POST', '/v1/tasks', {
      name: 'plain-nowhere',
      handler: 'nowhere-greet',
      payload: {},
      schedule: { at: new Date(Date.now() + 1_000).toISOString() },
      policy: { maxDelay: '4s', misfire: 'skip' },
    });
    const waiting = await cluster.waitFor(
      async () =>
        (await cluster.call('GET', '/v1/cluster')).body.waitingForWorker?.find(
          (w: { handler: string }) => w.handler === 'nowhere-greet',
        ),
      10_000,
      'the run listed as waiting for a worker',
    );
    expect(waiting).toMatchObject({ handler: 'nowhere-greet', runs: 1 });
    expect((await cluster.executionsOf('plain-nowhere'))[0]).toMatchObject({ attempt: 0 });
    const missed = await cluster.waitFor(
      async () =>
        (await cluster.executionsOf('plain-nowhere')).find((e) => e.status !== 'scheduled' && e.status !== 'queued'),
      20_000,
      'the slot decided',
    );
    expect(missed).toMatchObject({ status: 'missed', attempt: 0 });
  });

  it('close() drains and withdraws the worker from the cluster view', async () => {
    expect((await workers()).map((w) => w.instance)).toContain('plain-node');
    await worker!.close();
    worker = undefined;
    await cluster.waitFor(
      async () => !(await workers()).some((w) => w.instance === 'plain-node'),
      15_000,
      'the worker gone from the cluster view',
    );
  });
});

describe('worker options', () => {
  it('an embedded worker offers the built-in handlers (http, noop, log) only when asked; the built-in worker does by default', () => {
    const urls = { databaseUrl: 'postgresql://localhost/x', redisUrl: 'redis://localhost' };
    expect(workerConfig(urls).builtinHandlers).toBe(false);
    expect(workerConfig({ ...urls, builtinHandlers: true }).builtinHandlers).toBe(true);
    expect(workerConfig({ ...urls, env: { WORKER_BUILTIN_HANDLERS: 'true' } }).builtinHandlers).toBe(true);
    expect(loadConfig({}).builtinHandlers).toBe(true);
    expect(() => loadConfig({ WORKER_BUILTIN_HANDLERS: 'yes' })).toThrow(
      /WORKER_BUILTIN_HANDLERS must be true or false/,
    );
  });

  it('a bad option is refused before anything starts, naming the option', () => {
    expect(() =>
      PunctualWorkerModule.forRoot({
        databaseUrl: 'postgresql://localhost/x',
        redisUrl: 'redis://localhost',
        concurrency: 0,
      }),
    ).toThrow(ConfigError);
    expect(() =>
      PunctualWorkerModule.forRoot({
        databaseUrl: 'postgresql://localhost/x',
        redisUrl: 'redis://localhost',
        concurrency: 0,
      }),
    ).toThrow(/^PunctualWorkerModule: Invalid configuration: concurrency \(WORKER_CONCURRENCY\) /);
    expect(() => PunctualWorkerModule.forRoot({ databaseUrl: 'not a url', redisUrl: 'redis://localhost' })).toThrow(
      /databaseUrl \(DATABASE_URL\)/,
    );
  });

  it('forRootAsync refuses handlers returned by its factory (they could not be registered), naming where they go', async () => {
    const { Module } = await import('@nestjs/common');
    const { NestFactory } = await import('@nestjs/core');
    @Module({
      imports: [
        PunctualWorkerModule.forRootAsync({
          useFactory: () =>
            ({
              databaseUrl: 'postgresql://localhost/x',
              redisUrl: 'redis://localhost',
              handlers: { late: async () => null },
            }) as never,
        }),
      ],
    })
    class HostModule {}
    await expect(
      NestFactory.createApplicationContext(HostModule, { logger: false, abortOnError: false }),
    ).rejects.toThrow(/useFactory returned handlers; pass them as forRootAsync\(\{ handlers \}\)/);
  });

  it('a start that fails (Postgres unreachable) rejects, and leaves nothing that keeps the process alive', async () => {
    // A plain Node process that tries once and does nothing else: it must end on its own, as it
    // would with no worker at all — no Redis connection or lease-keeping timer left open.
    const script = `
      import 'reflect-metadata';
      const { createWorker } = await import('./dist/libs/worker/src/index.js');
      const quiet = { log() {}, warn() {}, error() {} };
      await createWorker({ databaseUrl: 'postgresql://postgres@127.0.0.1:1/unreachable', redisUrl: ${JSON.stringify(REDIS_URL)}, redisPrefix: 'failed-start-${process.pid}', logger: quiet })
        .then(() => console.log('started'), (error) => console.log('rejected: ' + error.constructor.name));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    for (const stream of [child.stdout, child.stderr])
      stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = await Promise.race([
      once(child, 'exit').then(([code]) => code as number),
      sleep(15_000).then(() => 'still running'),
    ]);
    child.kill('SIGKILL');
    expect(output.trim()).toMatch(/^rejected: \w+$/);
    expect(exited, output).toBe(0);
  });

  it("does not read the host app's environment unless asked (its LOG_LEVEL or NODE_ENV are its own)", () => {
    const saved = process.env.WORKER_CONCURRENCY;
    process.env.WORKER_CONCURRENCY = 'not a number';
    try {
      expect(() =>
        PunctualWorkerModule.forRoot({ databaseUrl: 'postgresql://localhost/x', redisUrl: 'redis://localhost' }),
      ).not.toThrow();
      expect(() =>
        PunctualWorkerModule.forRoot({
          databaseUrl: 'postgresql://localhost/x',
          redisUrl: 'redis://localhost',
          env: { WORKER_CONCURRENCY: 'not a number' },
        }),
      ).toThrow(/WORKER_CONCURRENCY/);
    } finally {
      if (saved === undefined) delete process.env.WORKER_CONCURRENCY;
      else process.env.WORKER_CONCURRENCY = saved;
    }
  });
});
