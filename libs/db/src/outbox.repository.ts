import { Injectable } from '@nestjs/common';
import type { Outbox, Prisma } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** Owns the `outbox`: notifications written with the state change they announce. */
@Injectable()
export class OutboxRepository {
  constructor(private readonly prisma: PrismaService) {}

  async add(topic: string, payload: Prisma.InputJsonValue, db: Db): Promise<void> {
    await db.outbox.create({ data: { topic, payload } });
  }

  /**
   * Runs `deliver` over due messages inside one transaction that holds their rows
   * (`FOR UPDATE SKIP LOCKED`): a notifier that dies mid-delivery leaves them for the next one.
   */
  async drain(limit: number, deliver: (message: Outbox) => Promise<{ ok: true } | { ok: false; error: string; retryInMs: number | null }>): Promise<number> {
    return this.prisma.$transaction(
      async (tx) => {
        const due = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM outbox WHERE delivered_at IS NULL AND available_at <= now()
          ORDER BY available_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
        if (due.length === 0) return 0;
        const messages = await tx.outbox.findMany({ where: { id: { in: due.map((d) => d.id) } } });
        for (const message of messages) {
          const outcome = await deliver(message);
          await tx.outbox.update({
            where: { id: message.id },
            data: outcome.ok
              ? { deliveredAt: new Date(), attempts: { increment: 1 }, lastError: null }
              : outcome.retryInMs === null
                ? // Given up: kept for inspection, never retried.
                  { deliveredAt: new Date(0), attempts: { increment: 1 }, lastError: outcome.error }
                : { attempts: { increment: 1 }, lastError: outcome.error, availableAt: new Date(Date.now() + outcome.retryInMs) },
          });
        }
        return messages.length;
      },
      { timeout: 120_000, maxWait: 10_000 },
    );
  }

  pendingCount(): Promise<number> {
    return this.prisma.outbox.count({ where: { deliveredAt: null } });
  }
}
