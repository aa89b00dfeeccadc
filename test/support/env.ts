/** Where the tests find Postgres and Redis (the same defaults as the services). */
export const PG_BASE = process.env.TEST_DATABASE_BASE_URL ?? 'postgresql://postgres@127.0.0.1:5432';
export const ADMIN_URL = `${PG_BASE}/postgres`;
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function databaseUrl(name: string): string {
  return `${PG_BASE}/${name}`;
}
