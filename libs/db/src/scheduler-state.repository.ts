import { Injectable } from '@nestjs/common';
import { currentEpoch, fenceQuery, type LeaderFence } from './epoch-fence.js';
import { PrismaService, type Db } from './prisma.service.js';

/** A shard's fencing row as operators see it. */
export interface ShardState {
  shard: number;
  epoch: bigint;
  leaderId: string | null;
  acquiredAt: Date | null;
  heartbeatAt: Date | null;
}

/**
 * Owns `scheduler_state`: one row per shard (`id` = shard + 1) with the fencing epoch of the shard's
 * leader, and, on row 1, the cluster's shard count.
 */
@Injectable()
export class SchedulerStateRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Sets the cluster's shard count if none is set yet (the first scheduler to start) and makes sure
   * every shard has its row. Returns the count the cluster has: a scheduler whose own count differs
   * must not start.
   */
  async adoptShardCount(shards: number): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ shards: number }[]>`
        UPDATE scheduler_state SET shards = COALESCE(shards, ${shards}::int) WHERE id = 1 RETURNING shards`;
      const stored = row!.shards;
      if (stored === shards) {
        await tx.$executeRaw`INSERT INTO scheduler_state (id) SELECT generate_series(1, ${shards}::int) ON CONFLICT (id) DO NOTHING`;
      }
      return stored;
    });
  }

  /**
   * Called by a shard's new leader: takes the shard's next epoch, which fences out every earlier
   * leader of it. Waits for writes an earlier leader has fenced in open transactions; fails with a
   * lock timeout when one of them does not end in time (the caller tries again: a frozen leader's
   * session is ended by Postgres after `idle_in_transaction_session_timeout`).
   */
  async bumpEpoch(leaderId: string, shard = 0): Promise<bigint> {
    const rows = await this.prisma.$queryRaw<{ epoch: bigint }[]>`
      UPDATE scheduler_state SET epoch = epoch + 1, leader_id = ${leaderId}, acquired_at = now(), heartbeat_at = now()
      WHERE id = ${shard + 1}::int RETURNING epoch`;
    return rows[0]!.epoch;
  }

  /**
   * The first statement of every planning transaction: true while `epoch` is still the newest of its
   * shard, and then it stays so until the transaction ends (see `fenceQuery`).
   */
  async fence(fence: LeaderFence, db: Db): Promise<boolean> {
    const rows = await db.$queryRaw<unknown[]>(fenceQuery(fence));
    return rows.length === 1;
  }

  /** A shard leader's periodic sign of life; false when a newer leader has taken the shard's epoch. */
  async heartbeat(fence: LeaderFence): Promise<boolean> {
    const changed = await this.prisma.$executeRaw`UPDATE scheduler_state SET heartbeat_at = now() WHERE ${currentEpoch(fence)}`;
    return changed === 1;
  }

  /** Every shard's row, in shard order (as many as the cluster's shard count; one before any scheduler started). */
  async shards(): Promise<ShardState[]> {
    const rows = await this.prisma.schedulerState.findMany({ orderBy: { id: 'asc' } });
    const count = rows[0]?.shards ?? 1;
    return rows
      .filter((r) => r.id <= count)
      .map((r) => ({ shard: r.id - 1, epoch: r.epoch, leaderId: r.leaderId, acquiredAt: r.acquiredAt, heartbeatAt: r.heartbeatAt }));
  }
}
