import { loadConfigOrExit } from '@punctual/config';
import { ensureDatabase, findMigrationsDir, migrate, MigrationError } from './migrator.js';

/** `npm run migrate`: applies prisma/migrations to DATABASE_URL. */
const config = loadConfigOrExit();
const dir = findMigrationsDir();
try {
  if (await ensureDatabase(config.databaseUrl)) process.stdout.write('Created the database\n');
  const applied = await migrate(config.databaseUrl, dir);
  process.stdout.write(applied.length ? `Applied ${applied.join(', ')}\n` : 'Database is up to date\n');
} catch (error) {
  const message = error instanceof MigrationError ? error.message : `cannot migrate: ${(error as Error).message}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
