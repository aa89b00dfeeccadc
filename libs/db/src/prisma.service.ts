import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit, Optional } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { CONFIG, type Config } from '@punctual/config';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client.js';

/** Session limits of a process's connections (the scheduler's are tied to its lease). */
export interface DbSessionSettings {
  /** A session idle inside a transaction this long is ended by Postgres, its locks released. */
  idleInTransactionTimeoutMs: number;
  /** A statement waiting this long for a lock fails instead of waiting on. 0: no limit. */
  lockTimeoutMs: number;
}

export const DB_SESSION = Symbol('punctual.db-session');

/**
 * Without a role's own settings: a process frozen (SIGSTOP, a host lost without a FIN) inside a
 * transaction releases its row locks after a minute — an edit's task lock, a claim's — instead of
 * holding them until someone kills its session by hand.
 */
export const DEFAULT_DB_SESSION: DbSessionSettings = { idleInTransactionTimeoutMs: 60_000, lockTimeoutMs: 0 };

/**
 * The one Prisma client of a process. A failed connection stops the start. It closes last, at
 * application shutdown, after the roles (onModuleDestroy) have drained their work. Each session is
 * named after the instance (`application_name`), so `pg_stat_activity` shows who holds what.
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleInit, OnApplicationShutdown {
  /**
   * The connection pool under the client, for the few statements on a hot path (a worker's
   * batched claims and successes) where Prisma's per-statement overhead shows.
   */
  readonly pool: pg.Pool;

  constructor(@Inject(CONFIG) config: Config, @Optional() @Inject(DB_SESSION) session: DbSessionSettings = DEFAULT_DB_SESSION) {
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      application_name: `punctual ${config.instanceId}`.slice(0, 63),
      options: `-c idle_in_transaction_session_timeout=${session.idleInTransactionTimeoutMs} -c lock_timeout=${session.lockTimeoutMs}`,
    });
    super({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
    this.pool = pool;
  }

  async onModuleInit(): Promise<void> {
    await this.$connect();
    await this.$queryRaw`SELECT 1`;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}

/** A client or an interactive transaction: repositories accept either. */
export type Db = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
