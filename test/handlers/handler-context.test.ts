import { createHmac, randomUUID } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerModule } from '../../apps/worker/src/worker.module.js';
import { HandlerRegistry, type TaskHandlerContext } from '../../libs/handlers/src/index.js';
import { ExecutionRunner } from '../../libs/worker/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';
import { startLocalServer } from './local-server.js';

const SECRET = 'the-task-secret-a-handler-never-holds';
const hmac = (body: Buffer | string) => `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

/** The context the worker's runner hands a handler (the whole worker role in this process). */
describe('a handler’s context', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let app: INestApplicationContext;
  let runner: ExecutionRunner;
  let server: Awaited<ReturnType<typeof startLocalServer>>;
  const seen: TaskHandlerContext[] = [];

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    server = await startLocalServer({ '/hook': (res) => res.end('ok') });
    app = await NestFactory.createApplicationContext(
      WorkerModule.forRoot(sandbox.config({ HTTP_ALLOW_HOSTS: '127.0.0.1' })),
      { logger: false },
    );
    await app.init();
    app.get(HandlerRegistry).register('capture', { run: async (context) => void seen.push(context) });
    runner = app.get(ExecutionRunner);
  });
  afterAll(async () => {
    await app?.close();
    await server?.close();
    await db?.close();
    await sandbox?.dispose();
  });

  /** Runs one execution of a new task with `handler` and `payload`, signed with {@link SECRET}. */
  async function runOnce(handler: string, payload: object): Promise<string> {
    const name = `${handler}-${randomUUID().slice(0, 8)}`;
    const task = await db.prisma.task.create({
      data: { name, handler, payload, scheduleKind: 'cron', cron: '* * * * *', secret: SECRET },
    });
    const id = randomUUID();
    await db.prisma.taskExecution.create({
      data: {
        id,
        taskId: task.id,
        taskName: name,
        scheduledFor: new Date(),
        fireAt: new Date(),
        taskVersion: 1,
        status: 'queued',
      },
    });
    const done = await runner.runExecution({ executionId: id }, { workerId: 'w1' });
    return done.kind === 'ended' ? done.outcome : done.kind;
  }

  it('holds the task without its secret, and a signer in its stead', async () => {
    expect(await runOnce('capture', { hello: 'world' })).toBe('succeeded');
    const context = seen.at(-1)!;
    expect(context.task.handler).toBe('capture');
    expect(context.payload).toEqual({ hello: 'world' });
    expect(context.task).not.toHaveProperty('secret');
    expect(
      JSON.stringify({ ...context, signal: undefined }, (_key, value: unknown) =>
        typeof value === 'bigint' ? String(value) : value,
      ),
    ).not.toContain(SECRET);
    expect(context.sign('a body')).toBe(hmac('a body'));
    expect(context.sign.redact(`echoed ${SECRET}`)).toBe('echoed [redacted]');
  });

  it('the http handler’s request is signed with the task’s secret all the same', async () => {
    server.reset();
    expect(await runOnce('http', { url: server.url('/hook'), body: { n: 1 } })).toBe('succeeded');
    const [request] = server.requests;
    expect(request!.body.toString()).toBe('{"n":1}');
    expect(request!.headers['x-punctual-signature']).toBe(hmac(request!.body));
  });
});
