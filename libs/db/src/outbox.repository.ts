import { Injectable } from '@nestjs/common';
import type { Outbox, Prisma } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** Owns the `outbox`: notifications written with the state change they announce. */
@Injectable()
export class OutboxRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Adds a notification, due now by Postgres' clock (the column defaults, not this process's clock). */
  async add(topic: string, payload: Prisma.InputJsonValue, db: Db): Promise<void> {
    await db.$executeRaw`INSERT INTO outbox (topic, payload) VALUES (${topic}, ${JSON.stringify(payload)}::jsonb)`;
  }

  /**
   * Runs `deliver` over due messages inside one transaction that holds their rows
   * (`FOR UPDATE SKIP LOCKED`): a notifier that dies mid-delivery leaves them for the next one.
   */
  async drain(
    limit: number,
    deliver: (message: Outbox) => Promise<{ ok: true } | { ok: false; error: string; retryInMs: number | null }>,
  ): Promise<number> {
    return this.prisma.$transaction(
      async (tx) => {
        const due = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM outbox WHERE delivered_at IS NULL AND available_at <= now()
          ORDER BY available_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
        if (due.length === 0) return 0;
        const messages = await tx.outbox.findMany({ where: { id: { in: due.map((d) => d.id) } } });
        // Every instant is Postgres' (one clock): a notifier with a skewed clock neither delays nor hurries a retry.
        for (const message of messages) {
          const outcome = await deliver(message);
          if (outcome.ok) {
            await tx.$executeRaw`UPDATE outbox SET delivered_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = ${message.id}::uuid`;
          } else if (outcome.retryInMs === null) {
            // Given up: kept for inspection, never retried.
            await tx.$executeRaw`UPDATE outbox SET delivered_at = to_timestamp(0), attempts = attempts + 1, last_error = ${outcome.error} WHERE id = ${message.id}::uuid`;
          } else {
            await tx.$executeRaw`
              UPDATE outbox SET attempts = attempts + 1, last_error = ${outcome.error}, available_at = now() + ${outcome.retryInMs} * interval '1 millisecond'
              WHERE id = ${message.id}::uuid`;
          }
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
