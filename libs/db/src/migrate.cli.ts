import { loadConfigOrExit } from '@punctual/config';
import { ensureDatabase, findMigrationsDir, migrate, MigrationError } from './migrator.js';

/**
 * `npm run migrate`: applies prisma/migrations to DATABASE_DIRECT_URL when set, else DATABASE_URL.
 * Migrations hold a session-level advisory lock, which a pooler in transaction mode cannot keep.
 */
const config = loadConfigOrExit();
const url = config.databaseDirectUrl ?? config.databaseUrl;
const dir = findMigrationsDir();
try {
  if (await ensureDatabase(url)) process.stdout.write('Created the database\n');
  const applied = await migrate(url, dir);
  process.stdout.write(applied.length ? `Applied ${applied.join(', ')}\n` : 'Database is up to date\n');
} catch (error) {
  const message = error instanceof MigrationError ? error.message : `cannot migrate: ${(error as Error).message}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
