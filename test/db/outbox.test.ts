import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { OutboxRepository } from '../../libs/db/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

const HOUR = 3_600_000;

/**
 * DESIGN §4 "One clock": the outbox's instants are Postgres'. A notifier whose own clock is an hour
 * off neither delays a new notification nor a retry by that hour, nor hurries them.
 */
describe("the outbox keeps time by Postgres' clock", () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let outbox: OutboxRepository;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    outbox = new OutboxRepository(db.prisma);
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  const postgresNow = async () => (await db.prisma.$queryRaw<{ now: Date }[]>`SELECT now()`)[0]!.now.getTime();
  const row = async (topic: string) => await db.prisma.outbox.findFirstOrThrow({ where: { topic } });

  it.each([HOUR, -HOUR])(
    "with this process's clock %i ms off: a new message is due now, a retry after its wait, a delivery stamped now",
    async (skew) => {
      const topic = `skewed${skew}`;
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + skew });
      await outbox.add(topic, { n: 1 }, db.prisma);
      let at = await postgresNow();
      expect(Math.abs((await row(topic)).availableAt.getTime() - at)).toBeLessThan(5_000);

      await outbox.drain(10, async () => ({ ok: false, error: 'answered 500', retryInMs: 30_000 }));
      at = await postgresNow();
      const retried = await row(topic);
      expect(retried.attempts).toBe(1);
      expect(Math.abs(retried.availableAt.getTime() - (at + 30_000))).toBeLessThan(5_000);

      await db.prisma.$executeRaw`UPDATE outbox SET available_at = now() WHERE topic = ${topic}`;
      await outbox.drain(10, async () => ({ ok: true }));
      at = await postgresNow();
      expect(Math.abs((await row(topic)).deliveredAt!.getTime() - at)).toBeLessThan(5_000);
      await db.prisma.outbox.deleteMany({ where: { topic } });
    },
  );
});
