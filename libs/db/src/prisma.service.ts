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
  /**
   * Whether the role relies on these limits (a scheduler: its fencing does). Such a role connects
   * to DATABASE_DIRECT_URL when DATABASE_URL goes through a pooler in transaction mode, which
   * cannot keep a session's settings; the others connect through the pooler, whose own
   * `idle_transaction_timeout` then ends a transaction left open.
   */
  needsSession?: boolean;
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
  /** Whether this process's connections go through a pooler in transaction mode (see {@link statementName}). */
  readonly throughPooler: boolean;
  private readonly poolOptions: pg.PoolConfig;
  private ownLeasePool: pg.Pool | null = null;

  constructor(
    @Inject(CONFIG) config: Config,
    @Optional() @Inject(DB_SESSION) session: DbSessionSettings = DEFAULT_DB_SESSION,
  ) {
    const pooled = config.databasePooling === 'transaction';
    const direct = pooled && session.needsSession === true;
    const throughPooler = pooled && !direct;
    const options: pg.PoolConfig = {
      // The configuration requires DATABASE_DIRECT_URL whenever DATABASE_POOLING is transaction.
      connectionString: direct ? config.databaseDirectUrl! : config.databaseUrl,
      application_name: `punctual ${config.instanceId}`.slice(0, 63),
      // A transaction-mode pooler refuses startup options (and could not keep them for the session).
      // No JIT: Punctual's statements are short, and over a partitioned history their cost estimates
      // add up past jit_above_cost, where compiling them takes a hundred times as long as running
      // them (a task list page: 170 ms with JIT, 1.8 ms without). Through a pooler, set it on the
      // role (`ALTER ROLE … SET jit = off`, docs/deploying.md).
      options: throughPooler
        ? undefined
        : `-c idle_in_transaction_session_timeout=${session.idleInTransactionTimeoutMs} -c lock_timeout=${session.lockTimeoutMs} -c jit=off`,
    };
    const pool = new pg.Pool({ ...options, max: config.dbPoolSize });
    super({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
    this.pool = pool;
    this.poolOptions = options;
    this.throughPooler = throughPooler;
  }

  /**
   * The name a hot statement is prepared under, once per connection; none through a pooler in
   * transaction mode, where the next transaction may run on another server connection that never
   * saw it prepared (PgBouncer before 1.21 keeps no prepared statements).
   */
  statementName(name: string): string | undefined {
    return this.throughPooler ? undefined : name;
  }

  /**
   * A connection of its own for a worker's leases (renewals, ownership checks), opened on first use:
   * they never queue behind the claims and successes of a busy pool, so a slow database does not
   * cost a run its lease (see the connection budget in docs/configuration.md).
   */
  get leasePool(): pg.Pool {
    if (!this.ownLeasePool) {
      this.ownLeasePool = new pg.Pool({
        ...this.poolOptions,
        max: 1,
        application_name: `${this.poolOptions.application_name} leases`.slice(0, 63),
      });
      // An idle connection that dies (a restart) is replaced on the next use; nothing to report.
      this.ownLeasePool.on('error', () => undefined);
    }
    return this.ownLeasePool;
  }

  async onModuleInit(): Promise<void> {
    await this.$connect();
    await this.$queryRaw`SELECT 1`;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
    await this.ownLeasePool?.end();
  }
}

/** A client or an interactive transaction: repositories accept either. */
export type Db = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
