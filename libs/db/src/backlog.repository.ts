import { Injectable } from '@nestjs/common';
import { PrismaService } from './prisma.service.js';

/** What waits for someone: dead letters for an operator, undelivered notifications for the notifier. */
export interface Backlog {
  deadLetters: number;
  outboxPending: number;
  /** Age of the oldest undelivered notification; 0 when there is none. */
  outboxOldestPendingSeconds: number;
}

/** Reads the backlogs that metrics and alerts watch, in one statement. */
@Injectable()
export class BacklogRepository {
  constructor(private readonly prisma: PrismaService) {}

  async read(): Promise<Backlog> {
    // Both counts run on partial or leading-column indexes: `(status, fire_at)` and `outbox_pending_idx`.
    const [row] = await this.prisma.$queryRaw<{ dead: number; pending: number; oldest: number }[]>`
      SELECT (SELECT count(*) FROM task_execution WHERE status = 'dead')::int AS dead,
             (SELECT count(*) FROM outbox WHERE delivered_at IS NULL)::int AS pending,
             COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(created_at) FROM outbox WHERE delivered_at IS NULL)), 0)::float8 AS oldest`;
    return {
      deadLetters: row!.dead,
      outboxPending: row!.pending,
      outboxOldestPendingSeconds: Math.max(0, row!.oldest),
    };
  }
}
