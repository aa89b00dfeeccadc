import { defineConfig } from 'prisma/config';

// Read by the Prisma CLI only (`prisma generate`, `prisma migrate deploy`); the services read
// DATABASE_URL through libs/config.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/punctual' },
});
