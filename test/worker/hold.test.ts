import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerModule } from '../../apps/worker/src/worker.module.js';
import { ExecutionRunner } from '../../libs/worker/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

/** The worker's runner in this process (the whole worker role, on a database and prefix of its own). */
describe('a job pushed ahead of its slot', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let app: INestApplicationContext;
  let runner: ExecutionRunner;
  let taskId: string;
  let slot = 0;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    app = await NestFactory.createApplicationContext(WorkerModule.forRoot(sandbox.config({ FIRE_LEAD_MS: '200' })), {
      logger: false,
    });
    await app.init();
    runner = app.get(ExecutionRunner);
    taskId = (
      await db.prisma.task.create({
        data: { name: 'held', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
      })
    ).id;
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
    await sandbox?.dispose();
  });

  async function queuedExecution(fireAt: Date): Promise<string> {
    const id = randomUUID();
    slot += 1;
    await db.historyAt(new Date(slot * 60_000));
    await db.prisma.taskExecution.create({
      data: {
        id,
        taskId,
        taskName: 'held',
        scheduledFor: new Date(slot * 60_000),
        fireAt,
        taskVersion: 1,
        status: 'queued',
      },
    });
    return id;
  }

  it('waits for its fire_at, then is claimed and run', async () => {
    const fireAt = new Date(Date.now() + 150);
    const id = await queuedExecution(fireAt);
    expect(await runner.runExecution({ executionId: id, fireAt: fireAt.getTime() }, { workerId: 'w1' })).toEqual({
      kind: 'ended',
      outcome: 'succeeded',
    });
    const row = await db.prisma.taskExecution.findFirstOrThrow({ where: { id } });
    expect(row.status).toBe('succeeded');
    expect(row.startedAt!.getTime()).toBeGreaterThanOrEqual(fireAt.getTime());
  });

  it('is not claimed when the worker hands its work back (shutdown) while holding it', async () => {
    const fireAt = new Date(Date.now() + 150);
    const id = await queuedExecution(fireAt);
    const outcome = runner.runExecution({ executionId: id, fireAt: fireAt.getTime() }, { workerId: 'w1' });
    runner.abortAll();
    expect(await outcome).toEqual({ kind: 'dropped', why: 'released' });
    expect((await db.prisma.taskExecution.findFirstOrThrow({ where: { id } })).status).toBe('queued');
  });
});
