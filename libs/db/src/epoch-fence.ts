import { Prisma } from './generated/prisma/client.js';

/**
 * What a shard's leader writes under: its shard, the cluster's shard count, and the epoch it took
 * for that shard. A bare epoch is the one shard of an unsharded cluster.
 */
export interface ShardFence {
  readonly shard: number;
  readonly shards: number;
  readonly epoch: bigint;
}

export type LeaderFence = bigint | ShardFence;

export function shardFence(fence: LeaderFence): ShardFence {
  return typeof fence === 'bigint' ? { shard: 0, shards: 1, epoch: fence } : fence;
}

/** `<a shard's row in scheduler_state> AND <its epoch is still this one>`: the condition every fence tests. */
export function currentEpoch(fence: LeaderFence): Prisma.Sql {
  const { shard, epoch } = shardFence(fence);
  return Prisma.sql`id = ${shard + 1}::int AND epoch = ${epoch.toString()}::bigint`;
}

/**
 * The fence: a row while `epoch` is the newest of its shard, none once a newer leader took the shard.
 *
 * `FOR SHARE` makes the fence hold to the end of the write's transaction: a new leader's epoch bump
 * (an UPDATE of that row) waits for writes already fenced to commit, and a fenced write that waited
 * for a bump re-reads the row and finds its epoch gone. The leader's own writes share the lock and
 * never wait on each other.
 */
export function fenceQuery(fence: LeaderFence): Prisma.Sql {
  return Prisma.sql`SELECT 1 FROM scheduler_state WHERE ${currentEpoch(fence)} FOR SHARE`;
}

/**
 * {@link fenceQuery} as a CTE named `fence`, for a leader's write to carry in its own statement: the
 * statement writes only while `epoch` is the newest of its shard (`WHERE EXISTS (SELECT 1 FROM fence)`).
 */
export function epochFence(fence: LeaderFence): Prisma.Sql {
  return Prisma.sql`fence AS (${fenceQuery(fence)})`;
}

/**
 * The shard of a task id in SQL: the first 32 bits of the MD5 of its text, modulo the shard count —
 * the same number as `shardOf` in `@punctual/planning`. An execution of a deleted task (no task id)
 * belongs to shard 0.
 */
export function shardOfSql(taskId: Prisma.Sql, shards: number): Prisma.Sql {
  return Prisma.sql`COALESCE((('x' || left(md5(${taskId}::text), 8))::bit(32)::bigint % ${shards}::int)::int, 0)`;
}

/** `AND <the task id is of the fence's shard>`; nothing at all when there is one shard. */
export function inShard(taskId: Prisma.Sql, fence: LeaderFence): Prisma.Sql {
  const { shard, shards } = shardFence(fence);
  return shards === 1 ? Prisma.empty : Prisma.sql`AND ${shardOfSql(taskId, shards)} = ${shard}::int`;
}
