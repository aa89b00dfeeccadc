import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig, type Config } from '../../libs/config/src/index.js';
import { findMigrationsDir, migrate } from '../../libs/db/src/migrator.js';
import { PG_BASE, REDIS_URL } from './env.js';

/** A database and a Redis prefix of its own, and a config pointing at them. */
export interface Sandbox {
  name: string;
  databaseUrl: string;
  redisPrefix: string;
  config(overrides?: Record<string, string>): Config;
  env(overrides?: Record<string, string>): Record<string, string>;
  /** Drops the database and deletes every key under the prefix. */
  dispose(): Promise<void>;
}

/**
 * Opens a sandbox: a clone of `template` when given (tests: one migrated template per run), else a
 * new database migrated from `prisma/migrations` (benchmarks, which run outside vitest; a test on a
 * Postgres server of its own, at `base`).
 */
export async function openSandbox(template?: string, label = 't', base = PG_BASE): Promise<Sandbox> {
  const name = `punctual_${label}_${randomBytes(5).toString('hex')}`;
  const databaseUrl = (db: string) => `${base}/${db}`;
  const adminQuery = (sql: string) => query(databaseUrl('postgres'), sql);
  await adminQuery(template ? `CREATE DATABASE "${name}" TEMPLATE "${template}"` : `CREATE DATABASE "${name}"`);
  if (!template) await migrate(databaseUrl(name), findMigrationsDir());
  const redisPrefix = `${label}${randomBytes(5).toString('hex')}`;
  const env = (overrides: Record<string, string> = {}) => ({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl(name),
    REDIS_URL,
    REDIS_PREFIX: redisPrefix,
    LOG_LEVEL: 'warn',
    ADMIN_API_KEY: 'test-admin-key-0123456789',
    // Tests and benchmarks run slow and failing work with the `sleep` and `fail` handlers.
    ENABLE_TEST_HANDLERS: 'true',
    ...overrides,
  });
  return {
    name,
    databaseUrl: databaseUrl(name),
    redisPrefix,
    env,
    config: (overrides) => loadConfig(env(overrides)),
    async dispose() {
      await deleteKeys(redisPrefix);
      await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

async function query(url: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** Deletes every Redis key under `prefix`. */
export async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
