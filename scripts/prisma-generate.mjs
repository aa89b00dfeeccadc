#!/usr/bin/env node
// Generates the Prisma client. `prisma generate` does not execute the schema engine, but the CLI
// insists that one exists and tries to download it when it does not; where that download cannot
// happen (an offline build) any existing file satisfies the check.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const engines = fileURLToPath(new URL('../node_modules/@prisma/engines/package.json', import.meta.url));
  if (existsSync(engines)) env.PRISMA_SCHEMA_ENGINE_BINARY = engines;
}
const result = spawnSync('npx', ['--no-install', 'prisma', 'generate'], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
