#!/usr/bin/env node
// Builds what is out of date, and only that: the Prisma client (from prisma/schema.prisma), the
// server code (apps, libs, bench, chaos → dist/, through tsc and tsc-alias) and the web console
// (apps/console → dist/console, through vite). Each step remembers a hash of its inputs in
// dist/.build/; a step whose inputs hash the same and whose output is there is skipped, so a
// restart with nothing changed builds nothing. `--force` builds everything.
//   node scripts/build.mjs [--force]
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMPS = join(ROOT, 'dist/.build');
const force = process.argv.includes('--force');
const SKIP = new Set(['node_modules', 'dist', '.packs', 'artifacts']);

/** Every file under `dir` (relative to the root), skipping dependencies and build output. */
function filesUnder(dir, keep = () => true) {
  const found = [];
  const walk = (at) => {
    if (!existsSync(at)) return;
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (SKIP.has(entry.name)) continue;
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (keep(path)) found.push(relative(ROOT, path));
    }
  };
  walk(join(ROOT, dir));
  return found;
}

/** A hash of the files' names and contents. */
function hashOf(files) {
  const hash = createHash('sha256');
  for (const file of [...new Set(files)].sort())
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(ROOT, file)))
      .update('\0');
  return hash.digest('hex');
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const npx = (...args) => run('npx', ['--no-install', ...args]);

/** Runs `build` unless the hash of `inputs` is the one recorded when `output` was last built. */
function step(name, inputs, output, build) {
  const stamp = join(STAMPS, `${name}.sha256`);
  const hash = hashOf(inputs());
  if (!force && existsSync(join(ROOT, output)) && existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) {
    console.log(`build: ${name} is up to date`);
    return;
  }
  build();
  mkdirSync(STAMPS, { recursive: true });
  // The hash of the inputs as they are now: a file changed during the build is built again next time.
  writeFileSync(stamp, hashOf(inputs()));
}

const code = (path) => /\.(ts|tsx|mts|js|mjs|json|css|html)$/.test(path);
const config = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];

step(
  'prisma',
  () => ['prisma/schema.prisma', 'package-lock.json'],
  'libs/db/src/generated/prisma/client.ts',
  () => run(process.execPath, ['scripts/prisma-generate.mjs']),
);

step(
  'server',
  () => [
    ...config,
    ...filesUnder('libs', code),
    ...filesUnder('apps', (p) => code(p) && !p.includes('/apps/console/')),
    ...filesUnder('bench', code),
    ...filesUnder('chaos', code),
  ],
  'dist/apps/api/src/main.js',
  () => {
    npx('tsc', '-p', 'tsconfig.build.json');
    npx('tsc-alias', '-p', 'tsconfig.build.json');
    chmodSync(join(ROOT, 'dist/apps/cli/src/main.js'), 0o755);
  },
);

step(
  'console',
  () => [
    ...config,
    ...filesUnder('apps/console', code),
    ...filesUnder('libs/contract/src', code),
    ...filesUnder('libs/client/src', code),
  ],
  'dist/console/index.html',
  () => {
    npx('tsc', '-p', 'apps/console/tsconfig.json');
    npx('vite', 'build', '--config', 'apps/console/vite.config.ts');
  },
);
