import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** The advisory lock key Prisma Migrate takes, so this migrator and `prisma migrate deploy` exclude each other. */
const PRISMA_MIGRATE_LOCK = 72707369;

// The exact table `prisma migrate deploy` creates and reads.
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrationFile {
  name: string;
  sql: string;
  /** SHA-256 of the file, as Prisma computes it. */
  checksum: string;
}

/**
 * The project's `prisma/migrations`, found by walking up from this module — the same from the
 * sources (tests) and from `dist/` (services, container image).
 */
export function findMigrationsDir(from: string = fileURLToPath(import.meta.url)): string {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    const candidate = join(dir, 'prisma', 'migrations');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new MigrationError('prisma/migrations not found above ' + from);
  }
}

/** Names of the migrations recorded as applied (finished, not rolled back). */
export async function appliedMigrations(
  query: (sql: string) => Promise<{ migration_name: string }[]>,
): Promise<Set<string>> {
  const rows = await query(
    'SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
  );
  return new Set(rows.map((r) => r.migration_name));
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/** The migrations in `dir` (Prisma's layout: `<timestamp>_<name>/migration.sql`), oldest first. */
export async function readMigrations(dir: string): Promise<MigrationFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * Creates the database named in `databaseUrl` when it does not exist yet (a first local run), by
 * connecting to the server's `postgres` database. Returns true when it created one.
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const probe = new pg.Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
    return false;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw error;
  } finally {
    // Ending a probe that never connected can fail too; there is nothing to close then.
    await probe.end().catch(() => undefined);
  }
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '42P04') return false; // created meanwhile by another process
    throw error;
  } finally {
    await admin.end();
  }
}

/**
 * Applies every migration not yet recorded in `_prisma_migrations`, each in its own transaction,
 * under Prisma's advisory lock: safe when several processes start at once, and idempotent.
 * Returns the names it applied.
 */
export async function migrate(databaseUrl: string, migrationsDir: string): Promise<string[]> {
  const migrations = await readMigrations(migrationsDir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await takeMigrateLock(client);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<{
      migration_name: string;
      checksum: string;
      finished_at: Date | null;
      rolled_back_at: Date | null;
    }>('SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"');
    const failed = rows.find((r) => r.finished_at === null && r.rolled_back_at === null);
    if (failed) {
      throw new MigrationError(`migration ${failed.migration_name} failed earlier; resolve it before applying more`);
    }
    const applied = new Set(rows.filter((r) => r.finished_at !== null).map((r) => r.migration_name));
    const done: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.name)) continue;
      await applyOne(client, migration);
      done.push(migration.name);
    }
    return done;
  } finally {
    // Nothing to do when the unlock fails: a session lock ends with its session, closed on the next line.
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => undefined);
    await client.end();
  }
}

/**
 * Takes Prisma Migrate's advisory lock, trying every 200 ms rather than waiting on it: a session
 * waiting for a lock holds its statement's snapshot, and `CREATE INDEX CONCURRENTLY` in the session
 * that holds the lock waits for every older snapshot to end — a deadlock, were the others waiting.
 */
async function takeMigrateLock(client: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1) AS taken', [
      PRISMA_MIGRATE_LOCK,
    ]);
    if (rows[0]?.taken) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Whether a migration is one statement that Postgres refuses inside a transaction (`CREATE INDEX
 * CONCURRENTLY`, `DROP INDEX CONCURRENTLY`): such a file is applied on its own, outside a
 * transaction, as Prisma Migrate does (7.4 and later). Comments do not count as statements.
 */
export function runsOutsideTransaction(sql: string): boolean {
  const statements = sql
    .replace(/--[^\n]*/g, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
  return statements.length === 1 && /\bCONCURRENTLY\b/i.test(statements[0]!);
}

async function applyOne(client: pg.Client, migration: MigrationFile): Promise<void> {
  const id = randomUUID();
  const record = () =>
    client.query(
      'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
      [id, migration.checksum, migration.name],
    );
  const finish = () =>
    client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
  if (runsOutsideTransaction(migration.sql)) {
    // Recorded as started first: a build that fails (or a process killed during it) stays a failed
    // migration, which stops the next start until it is resolved, as Prisma's would.
    await record();
    try {
      await client.query(migration.sql);
    } catch (error) {
      throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`);
    }
    await finish();
    return;
  }
  await client.query('BEGIN');
  try {
    await record();
    await client.query(migration.sql);
    await finish();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`);
  }
}
