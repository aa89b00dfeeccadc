import type { Config } from '@punctual/config';
import type { DbSessionSettings } from '@punctual/db';

/**
 * A scheduler's Postgres sessions: an open transaction of a leader that froze (GC, SIGSTOP, a VM
 * migration, a host lost without a FIN) is ended by Postgres, and its locks released, before its
 * lease would end — so its successor's epoch bump waits for it at most about one lease. The same
 * bound on lock waits keeps a leader from queueing behind anything for longer. Its fencing relies
 * on these limits: past a pooler in transaction mode, which keeps no session settings, a scheduler
 * connects to DATABASE_DIRECT_URL.
 */
export function leaderDbSession(config: Pick<Config, 'leaderTtlMs'>): DbSessionSettings {
  const belowLease = Math.floor(config.leaderTtlMs * 0.8);
  return { idleInTransactionTimeoutMs: belowLease, lockTimeoutMs: belowLease, needsSession: true };
}
