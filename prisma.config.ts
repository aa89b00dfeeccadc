import { defineConfig } from 'prisma/config';

// Read by the Prisma CLI only (`prisma generate`, `prisma migrate deploy`); the services read
// DATABASE_URL through libs/config. Migrations hold a session-level advisory lock: past a pooler
// in transaction mode they need Postgres itself, DATABASE_DIRECT_URL.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: {
    url: process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/punctual',
  },
});
