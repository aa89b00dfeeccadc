import { Injectable } from '@nestjs/common';
import { currentEpoch, fenceQuery, type LeaderFence, shardFence } from './epoch-fence.js';
import { PrismaService, type Db } from './prisma.service.js';

/** A shard's fencing row as operators see it. */
export interface ShardState {
  shard: number;
  epoch: bigint;
  leaderId: string | null;
  acquiredAt: Date | null;
  heartbeatAt: Date | null;
}

/** One leader's time leading a shard (see `shard_leadership`). */
export interface Leadership {
  shard: number;
  epoch: bigint;
  leaderId: string;
  from: Date;
  /** When it stepped down (`released`), else when it was last seen leading. */
  to: Date;
  released: boolean;
}

/**
 * The spans of `[from, to]` no leadership covers: when no scheduler led the shard. A leader is
 * taken to have led until a heartbeat period (`graceMs`) after it was last seen, so the time
 * between two heartbeats is not a gap.
 */
export function unledPeriods(
  leaderships: Leadership[],
  from: Date,
  to: Date,
  graceMs: number,
): { from: Date; to: Date }[] {
  const gaps: { from: Date; to: Date }[] = [];
  let cursor = from.getTime();
  for (const l of [...leaderships].sort((a, b) => a.from.getTime() - b.from.getTime())) {
    if (l.from.getTime() > cursor)
      gaps.push({ from: new Date(cursor), to: new Date(Math.min(l.from.getTime(), to.getTime())) });
    cursor = Math.max(cursor, l.to.getTime() + (l.released ? 0 : graceMs));
    if (cursor >= to.getTime()) return gaps;
  }
  if (cursor < to.getTime()) gaps.push({ from: new Date(cursor), to });
  return gaps;
}

/**
 * Owns `scheduler_state`: one row per shard (`id` = shard + 1) with the fencing epoch of the shard's
 * leader, and, on row 1, the cluster's shard count; and `shard_leadership`, each shard's history of leaders.
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
    // The leadership it begins is recorded in the same statement (kept as long as the history: see HistoryKeeper).
    const rows = await this.prisma.$queryRaw<{ epoch: bigint }[]>`
      WITH bumped AS (
        UPDATE scheduler_state SET epoch = epoch + 1, leader_id = ${leaderId}, acquired_at = now(), heartbeat_at = now()
        WHERE id = ${shard + 1}::int RETURNING epoch
      ),
      recorded AS (
        INSERT INTO shard_leadership (shard, epoch, leader_id, acquired_at, heartbeat_at)
        SELECT ${shard}::int, epoch, ${leaderId}, now(), now() FROM bumped
      )
      SELECT epoch FROM bumped`;
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
    const { shard, epoch } = shardFence(fence);
    const rows = await this.prisma.$queryRaw<{ beat: number }[]>`
      WITH beat AS (UPDATE scheduler_state SET heartbeat_at = now() WHERE ${currentEpoch(fence)} RETURNING id),
      seen AS (
        UPDATE shard_leadership SET heartbeat_at = now()
        WHERE shard = ${shard}::int AND epoch = ${epoch.toString()}::bigint AND EXISTS (SELECT 1 FROM beat)
      )
      SELECT count(*)::int AS beat FROM beat`;
    return rows[0]!.beat === 1;
  }

  /** A leader stepping down cleanly says when: its leadership ends then, not at its last heartbeat. */
  async release(fence: LeaderFence): Promise<void> {
    const { shard, epoch } = shardFence(fence);
    await this.prisma.$executeRaw`
      UPDATE shard_leadership SET released_at = now(), heartbeat_at = now()
      WHERE shard = ${shard}::int AND epoch = ${epoch.toString()}::bigint AND released_at IS NULL`;
  }

  /**
   * A shard's leaderships that overlap `[from, to]`, oldest first, each from its start to its end:
   * when it stepped down, else when it was last seen leading (its heartbeat). What lies between
   * them (see {@link unledPeriods}) is when no scheduler led the shard.
   */
  async leaderships(shard: number, from: Date, to: Date): Promise<Leadership[]> {
    const rows = await this.prisma.$queryRaw<
      { epoch: bigint; leader_id: string; acquired_at: Date; heartbeat_at: Date; released_at: Date | null }[]
    >`
      SELECT epoch, leader_id, acquired_at, heartbeat_at, released_at FROM shard_leadership
      WHERE shard = ${shard}::int AND acquired_at <= ${to} AND COALESCE(released_at, heartbeat_at) >= ${from}
      ORDER BY epoch`;
    return rows.map((r) => ({
      shard,
      epoch: r.epoch,
      leaderId: r.leader_id,
      from: r.acquired_at,
      to: r.released_at ?? r.heartbeat_at,
      released: r.released_at !== null,
    }));
  }

  /** Every shard's row, in shard order (as many as the cluster's shard count; one before any scheduler started). */
  async shards(): Promise<ShardState[]> {
    const rows = await this.prisma.schedulerState.findMany({ orderBy: { id: 'asc' } });
    const count = rows[0]?.shards ?? 1;
    return rows
      .filter((r) => r.id <= count)
      .map((r) => ({
        shard: r.id - 1,
        epoch: r.epoch,
        leaderId: r.leaderId,
        acquiredAt: r.acquiredAt,
        heartbeatAt: r.heartbeatAt,
      }));
  }
}
