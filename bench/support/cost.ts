import { Redis } from 'ioredis';
import pg from 'pg';

/** What Postgres and Redis did between two readings, in all and per successful run. */
export interface Cost {
  runs: number;
  /** Statements executed in the database (pg_stat_statements; null when it is not loaded). */
  statements: number | null;
  /** Transactions committed or rolled back in the database. */
  transactions: number;
  /** Rows inserted, updated and deleted in the database (tables and their TOAST, not indexes). */
  rowsWritten: number;
  rowsInserted: number;
  rowsUpdated: number;
  rowsDeleted: number;
  /** Of the updates, those that rewrote no index (heap-only tuples). */
  hotUpdates: number;
  /** WAL written by the whole server (pg_stat_wal): the machine should be otherwise quiet. */
  walBytes: number;
  /** Commands the Redis server executed (INFO commandstats): likewise server-wide. */
  redisCommands: number;
  /** The statements that ran most often, with their calls and the rows they returned or touched. */
  topStatements: { calls: number; rows: number; query: string }[];
}

interface Reading {
  at: number;
  statements: number | null;
  transactions: number;
  inserted: number;
  updated: number;
  deleted: number;
  hot: number;
  walBytes: number;
  redisCommands: number;
}

/**
 * Reads Postgres' and Redis' own counters around a measured window: `pg_stat_database` and
 * `pg_stat_user_tables` of the sandbox's database, `pg_stat_wal`, `pg_stat_statements` when the
 * server preloads it (`shared_preload_libraries = 'pg_stat_statements'`), and Redis' INFO
 * commandstats. Postgres publishes a busy backend's counters about once a second and an idle
 * one's within 10 s, so readings are taken over windows of tens of seconds, or after the
 * processes that did the work have exited.
 */
export class CostMeter {
  private constructor(
    private readonly db: pg.Client,
    private readonly redis: Redis,
    private readonly statementsLoaded: boolean,
  ) {}

  static async open(databaseUrl: string, redisUrl: string): Promise<CostMeter> {
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    let loaded = false;
    try {
      const { rows } = await db.query<{ loaded: boolean }>(
        `SELECT 'pg_stat_statements' = ANY(string_to_array(current_setting('shared_preload_libraries'), ',')) AS loaded`,
      );
      if (rows[0]?.loaded) {
        await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
        loaded = true;
      }
    } catch {
      loaded = false;
    }
    return new CostMeter(db, new Redis(redisUrl), loaded);
  }

  /** Forgets the statements seen so far in this database, so that {@link topStatements} covers one window. */
  async resetStatements(): Promise<void> {
    if (this.statementsLoaded)
      await this.db.query(
        `SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)`,
      );
  }

  async read(): Promise<Reading> {
    await this.db.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await this.db.query<Record<string, string | null>>(`
      SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()) AS transactions,
             (SELECT sum(n_tup_ins) FROM pg_stat_user_tables) AS inserted,
             (SELECT sum(n_tup_upd) FROM pg_stat_user_tables) AS updated,
             (SELECT sum(n_tup_del) FROM pg_stat_user_tables) AS deleted,
             (SELECT sum(n_tup_hot_upd) FROM pg_stat_user_tables) AS hot,
             (SELECT wal_bytes FROM pg_stat_wal) AS wal_bytes,
             ${this.statementsLoaded ? `(SELECT sum(calls) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()))` : 'NULL'} AS statements`);
    const r = rows[0]!;
    const stats = await this.redis.info('commandstats');
    let redisCommands = 0;
    for (const match of stats.matchAll(/calls=(\d+)/g)) redisCommands += Number(match[1]);
    return {
      at: Date.now(),
      statements: r.statements === null ? null : Number(r.statements),
      transactions: Number(r.transactions),
      inserted: Number(r.inserted),
      updated: Number(r.updated),
      deleted: Number(r.deleted),
      hot: Number(r.hot),
      walBytes: Number(r.wal_bytes),
      redisCommands,
    };
  }

  /** What happened between two readings, for `runs` successful runs. */
  async cost(before: Reading, after: Reading, runs: number): Promise<Cost> {
    const rowsInserted = after.inserted - before.inserted;
    const rowsUpdated = after.updated - before.updated;
    const rowsDeleted = after.deleted - before.deleted;
    return {
      runs,
      statements: before.statements === null || after.statements === null ? null : after.statements - before.statements,
      transactions: after.transactions - before.transactions,
      rowsWritten: rowsInserted + rowsUpdated + rowsDeleted,
      rowsInserted,
      rowsUpdated,
      rowsDeleted,
      hotUpdates: after.hot - before.hot,
      walBytes: after.walBytes - before.walBytes,
      redisCommands: after.redisCommands - before.redisCommands,
      topStatements: await this.topStatements(),
    };
  }

  private async topStatements(): Promise<Cost['topStatements']> {
    if (!this.statementsLoaded) return [];
    const { rows } = await this.db.query<{ calls: string; rows: string; query: string }>(`
      SELECT calls, rows, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC LIMIT 12`);
    return rows.map((r) => ({ calls: Number(r.calls), rows: Number(r.rows), query: r.query.slice(0, 160) }));
  }

  async close(): Promise<void> {
    await this.db.end();
    this.redis.disconnect();
  }
}

/** A cost per successful run, for the table: `1.3 statements, 3.3 rows written, 2.0 kB WAL, 49.2 Redis commands`. */
export function perRun(cost: Cost): string {
  if (cost.runs === 0) return '—';
  const per = (n: number) => (n / cost.runs).toFixed(1);
  const statements =
    cost.statements === null ? `${per(cost.transactions)} transactions` : `${per(cost.statements)} statements`;
  return `${statements}, ${per(cost.rowsWritten)} rows written, ${(cost.walBytes / cost.runs / 1024).toFixed(1)} kB WAL, ${per(cost.redisCommands)} Redis commands`;
}
