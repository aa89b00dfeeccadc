import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../libs/config/src/index.js';
import { ADMIN_URL, databaseUrl, REDIS_URL } from './env.js';

/** A database and a Redis prefix of a test's own, and a config pointing at them. */
export interface Sandbox {
  name: string;
  databaseUrl: string;
  redisPrefix: string;
  config(overrides?: Record<string, string>): Config;
  env(overrides?: Record<string, string>): Record<string, string>;
  /** Drops the database and deletes every key under the prefix. */
  dispose(): Promise<void>;
}

export async function createSandbox(): Promise<Sandbox> {
  const name = `punctual_t_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${inject('templateDatabase')}"`);
  } finally {
    await admin.end();
  }
  const redisPrefix = `t${randomBytes(5).toString('hex')}`;
  const env = (overrides: Record<string, string> = {}) => ({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl(name),
    REDIS_URL,
    REDIS_PREFIX: redisPrefix,
    LOG_LEVEL: 'warn',
    ADMIN_API_KEY: 'test-admin-key-0123456789',
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
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

async function deleteKeys(prefix: string): Promise<void> {
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
