import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxNotifier } from '../../libs/worker/src/index.js';
import { OutboxRepository } from '../../libs/db/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('outbox notifier and refused destinations', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  it('gives up at once on a destination the SSRF guard refuses, and never retries it', async () => {
    const task = await db.prisma.task.create({
      data: { name: 'notify-private', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
    });
    const row = await db.prisma.outbox.create({
      data: {
        topic: 'execution.dead',
        payload: { url: 'http://10.0.0.1/hook', taskId: task.id, event: 'dead', execution: {} },
      },
    });
    const notifier = new OutboxNotifier(sandbox.config(), new OutboxRepository(db.prisma), db.tasks, new Metrics());
    await notifier.drainOnce();
    const after = await db.prisma.outbox.findUniqueOrThrow({ where: { id: row.id } });
    expect(after.attempts).toBe(1);
    expect(after.deliveredAt?.getTime()).toBe(0);
    expect(after.lastError).toMatch(/10\.0\.0\.1/);
  });
});
