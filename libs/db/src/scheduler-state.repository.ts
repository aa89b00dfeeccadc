import { Injectable } from '@nestjs/common';
import { PrismaService, type Db } from './prisma.service.js';

/** Owns the single `scheduler_state` row: the fencing epoch of the leader. */
@Injectable()
export class SchedulerStateRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Called by a new leader: takes the next epoch, which fences out every earlier leader. Waits for
   * writes an earlier leader has fenced in open transactions; fails with a lock timeout when one of
   * them does not end in time (the caller tries again: a frozen leader's session is ended by
   * Postgres after `idle_in_transaction_session_timeout`).
   */
  async bumpEpoch(leaderId: string): Promise<bigint> {
    const rows = await this.prisma.$queryRaw<{ epoch: bigint }[]>`
      UPDATE scheduler_state SET epoch = epoch + 1, leader_id = ${leaderId}, acquired_at = now(), heartbeat_at = now()
      WHERE id = 1 RETURNING epoch`;
    return rows[0]!.epoch;
  }

  /**
   * The first statement of every planning transaction: true while `epoch` is still the newest, and
   * then it stays so until the transaction ends (see `epochFence`).
   */
  async fence(epoch: bigint, db: Db): Promise<boolean> {
    const rows = await db.$queryRaw<unknown[]>`
      SELECT 1 FROM scheduler_state WHERE id = 1 AND epoch = ${epoch.toString()}::bigint FOR SHARE`;
    return rows.length === 1;
  }

  /** The leader's periodic sign of life; false when a newer leader has taken the epoch. */
  async heartbeat(epoch: bigint): Promise<boolean> {
    const changed = await this.prisma.$executeRaw`
      UPDATE scheduler_state SET heartbeat_at = now() WHERE id = 1 AND epoch = ${epoch.toString()}::bigint`;
    return changed === 1;
  }

  current() {
    return this.prisma.schedulerState.findUnique({ where: { id: 1 } });
  }
}
