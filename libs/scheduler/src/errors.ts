import { ConfigError } from '@punctual/config';
/** The planner's epoch is no longer the newest: another leader has taken over. */
export class FencedOutError extends Error {
  override readonly name = 'FencedOutError';
  constructor(readonly epoch: bigint) {
    super(`epoch ${epoch} was superseded by a newer leader`);
  }
}

/**
 * A scheduler configured with another shard count than the cluster's (fixed in Postgres when its
 * first scheduler started): a configuration error, which start-up reports in one line and exits 78.
 */
export class ShardCountMismatchError extends ConfigError {
  constructor(configured: number, stored: number) {
    super(
      `Invalid configuration: SCHEDULER_SHARDS is ${configured} but this cluster's tasks are split into ${stored} shard(s), fixed when its first scheduler started (stored in Postgres)`,
    );
  }
}
