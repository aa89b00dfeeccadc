import { Prisma } from './generated/prisma/client.js';

/**
 * The epoch fence as a CTE named `fence`, for a leader's write to carry in its own statement: the
 * statement writes only while `epoch` is the newest (`WHERE EXISTS (SELECT 1 FROM fence)`).
 *
 * `FOR SHARE` makes the fence hold to the end of the write's transaction: a new leader's epoch bump
 * (an UPDATE of that row) waits for writes already fenced to commit, and a fenced write that waited
 * for a bump re-reads the row and finds its epoch gone. The leader's own writes share the lock and
 * never wait on each other.
 */
export function epochFence(epoch: bigint): Prisma.Sql {
  return Prisma.sql`fence AS (SELECT 1 FROM scheduler_state WHERE id = 1 AND epoch = ${epoch.toString()}::bigint FOR SHARE)`;
}

/** The same fence for a statement written by hand for the `pg` pool: `$n` is the epoch parameter. */
export function epochFenceText(parameter: number): string {
  return `fence AS (SELECT 1 FROM scheduler_state WHERE id = 1 AND epoch = $${parameter}::bigint FOR SHARE)`;
}
