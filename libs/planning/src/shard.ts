import { createHash } from 'node:crypto';

/**
 * The shard of a task: the first 32 bits of the MD5 of its id, modulo the cluster's shard count.
 * Stable (it depends on the id alone) and the same number Postgres computes (`shardOfSql` in
 * `@punctual/db`), so a leader's statements select exactly its tasks.
 */
export function shardOf(taskId: string, shards: number): number {
  if (shards === 1) return 0;
  return createHash('md5').update(taskId.toLowerCase()).digest().readUInt32BE(0) % shards;
}

/**
 * The parts of a shard's leader lock key in Redis (after the prefix): `scheduler:leader` when the
 * cluster has one shard (the name from before sharding, so an upgrade keeps one lock), else
 * `scheduler:leader:<shard>`. The one place that names it: the elector that takes the lock and the
 * balancer that looks for free shards read the same key.
 */
export function leaderKey(shard: number, shards: number): string[] {
  return shards === 1 ? ['scheduler', 'leader'] : ['scheduler', 'leader', String(shard)];
}

/** How many shards each of `schedulers` live schedulers should lead: the extra goes back, free ones are taken. */
export function shardShare(shards: number, schedulers: number): number {
  return Math.ceil(shards / Math.max(1, schedulers));
}
