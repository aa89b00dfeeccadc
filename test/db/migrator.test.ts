import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../libs/db/src/migrator.js';
import { ADMIN_URL, databaseUrl } from '../support/env.js';

const MIGRATIONS = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));
const created: string[] = [];

async function emptyDatabase(): Promise<string> {
  const name = `punctual_m_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  created.push(name);
  return databaseUrl(name);
}

afterEach(async () => {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  for (const name of created.splice(0)) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.end();
});

describe('migrator', () => {
  it('applies every migration once, even when several processes start at the same moment', async () => {
    const url = await emptyDatabase();
    const results = await Promise.all([migrate(url, MIGRATIONS), migrate(url, MIGRATIONS), migrate(url, MIGRATIONS)]);
    const migrations = await readMigrations(MIGRATIONS);
    expect(results.flat().sort()).toEqual(migrations.map((m) => m.name).sort());
    expect(await migrate(url, MIGRATIONS)).toEqual([]);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT * FROM "_prisma_migrations" ORDER BY migration_name');
      expect(rows).toHaveLength(migrations.length);
      for (const [i, row] of rows.entries()) {
        const file = readFileSync(`${MIGRATIONS}/${row.migration_name}/migration.sql`);
        // Recorded the way Prisma records it, so `prisma migrate deploy` sees them as applied.
        expect(row.checksum).toBe(createHash('sha256').update(file).digest('hex'));
        expect(row.migration_name).toBe(migrations[i]!.name);
        expect(row.finished_at).toBeInstanceOf(Date);
        expect(row.rolled_back_at).toBeNull();
        expect(row.applied_steps_count).toBe(1);
        expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      }
      const { rows: state } = await client.query('SELECT id, epoch FROM scheduler_state');
      expect(state).toEqual([{ id: 1, epoch: '0' }]);
    } finally {
      await client.end();
    }
  });

  it('refuses to continue past a migration that failed earlier', async () => {
    const url = await emptyDatabase();
    await migrate(url, MIGRATIONS);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name) VALUES (gen_random_uuid(), 'x', '29990101000000_broken')`,
    );
    await client.end();
    await expect(migrate(url, MIGRATIONS)).rejects.toThrow(/29990101000000_broken failed earlier/);
  });
});
