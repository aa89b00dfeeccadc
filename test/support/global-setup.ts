import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate, readMigrations } from '../../libs/db/src/migrator.js';
import { ADMIN_URL, databaseUrl } from './env.js';

const MIGRATIONS = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

/**
 * Migrates one template database per migration set; each test then clones it
 * (`CREATE DATABASE … TEMPLATE`), which is much faster than migrating every time.
 */
export default async function setup(project: TestProject): Promise<void> {
  const hash = createHash('sha256');
  for (const migration of await readMigrations(MIGRATIONS)) hash.update(migration.name).update(migration.checksum);
  // A fresh database gets the history partitions of the day it was migrated and the next: a template
  // is made again on another day.
  hash.update(new Date().toISOString().slice(0, 10));
  const template = `punctual_tpl_${hash.digest('hex').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
    if (!rowCount) {
      const building = `${template}_${process.pid}`;
      await admin.query(`CREATE DATABASE "${building}"`);
      await migrate(databaseUrl(building), MIGRATIONS);
      await admin.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`).catch(async () => {
        await admin.query(`DROP DATABASE IF EXISTS "${building}"`);
      });
    }
  } finally {
    await admin.end();
  }
  project.provide('templateDatabase', template);
}
