#!/usr/bin/env node
// Builds the packages a user installs into their own app, as tarballs in .packs/:
//   @punctual/contract  the API's schemas and types (libs/contract)
//   @punctual/client    the typed HTTP client (libs/client)
//   @punctual/worker    PunctualWorkerModule, createWorker and @TaskHandler (libs/worker and what it imports)
// Each holds the compiled files its entry reaches (JavaScript and declarations); the libraries it
// uses from another package are imported by that package's name, and every other import is a
// dependency at the version package.json asks for (a package only our dependencies declare, such as
// the Prisma client's runtime, at the version installed with them).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, '.packs');
const BUILD = join(OUT, 'build');
const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

/** Packages a compiled file loads by name at run time, not by an import (pino's transports): a dependency when named. */
const LOADED_BY_NAME = ['pino-pretty'];
/** Dependencies at exactly the installed version: the generated Prisma client packed here was made by that one. */
const EXACT = new Set(['@prisma/client']);

/** What the host app brings: one copy of Nest (its DI needs one) and of what Nest itself peers on. */
const PEERS = new Set(['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']);

const PACKAGES = [
  {
    name: '@punctual/contract',
    lib: 'contract',
    entry: 'libs/contract/src/index',
    description: "Punctual's HTTP API contract: request and response schemas (zod) and their types.",
  },
  {
    name: '@punctual/client',
    lib: 'client',
    entry: 'libs/client/src/index',
    description: "A typed client of Punctual's HTTP API over fetch.",
  },
  {
    name: '@punctual/worker',
    lib: 'worker',
    entry: 'libs/worker/src/public',
    description:
      'Run Punctual executions with your own handlers: a NestJS module (PunctualWorkerModule) or createWorker.',
  },
];

function run(command, args, cwd = ROOT) {
  return execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
}

/** The specifiers a compiled file imports: static, re-exported and dynamic. */
function specifiers(text) {
  const found = new Set();
  for (const pattern of [
    /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g,
    /(?:^|[\s;])import\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ]) {
    for (const match of text.matchAll(pattern)) found.add(match[1]);
  }
  return [...found];
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageOf = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/** Which package, other than `own`, owns a compiled file of libs/ (by its lib directory). */
function ownerOf(file, own) {
  const lib = relative(BUILD, file).split('/')[1];
  const owner = PACKAGES.find((p) => p.lib === lib && p !== own && p.lib !== 'worker');
  return owner;
}

function pack(spec) {
  const dir = join(OUT, spec.name.replace('@', '').replace('/', '-'));
  rmSync(dir, { recursive: true, force: true });
  const deps = new Set();
  const uses = new Set();
  const seen = new Set();
  const queue = [`${spec.entry}.js`, `${spec.entry}.d.ts`].map((f) => join(BUILD, f));
  while (queue.length > 0) {
    const file = queue.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    let text = readFileSync(file, 'utf8');
    for (const specifier of specifiers(text)) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier);
        const owner = ownerOf(target, spec);
        if (owner) {
          if (relative(BUILD, target) !== `${owner.entry}.js`)
            throw new Error(
              `${relative(BUILD, file)} imports ${specifier}: another package is used through its entry only`,
            );
          uses.add(owner.name);
          text = text.replaceAll(`'${specifier}'`, `'${owner.name}'`).replaceAll(`"${specifier}"`, `"${owner.name}"`);
          continue;
        }
        const candidates = file.endsWith('.d.ts')
          ? [target.replace(/\.js$/, '.d.ts'), join(target.replace(/\.js$/, ''), 'index.d.ts')]
          : [target];
        const next = candidates.find((c) => existsSync(c));
        if (!next) throw new Error(`${relative(BUILD, file)} imports ${specifier}, which was not built`);
        queue.push(next);
        if (!file.endsWith('.d.ts') && existsSync(target.replace(/\.js$/, '.d.ts')))
          queue.push(target.replace(/\.js$/, '.d.ts'));
      } else if (!specifier.startsWith('node:') && !builtinModules.includes(specifier)) {
        deps.add(packageOf(specifier));
      }
    }
    for (const name of LOADED_BY_NAME) if (text.includes(`'${name}'`)) deps.add(name);
    const to = join(dir, relative(BUILD, file));
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, text);
  }
  const versions = { ...root.devDependencies, ...root.dependencies };
  const pinned = (names) =>
    Object.fromEntries(
      [...names].sort().map((name) => {
        const installed = join(ROOT, 'node_modules', name, 'package.json');
        if (versions[name] && !EXACT.has(name)) return [name, versions[name]];
        if (existsSync(installed)) return [name, JSON.parse(readFileSync(installed, 'utf8')).version];
        throw new Error(`${spec.name} imports ${name}, which is not installed`);
      }),
    );
  const manifest = {
    name: spec.name,
    version: root.version,
    description: spec.description,
    license: root.license,
    type: 'module',
    main: `./${spec.entry}.js`,
    types: `./${spec.entry}.d.ts`,
    exports: { '.': { types: `./${spec.entry}.d.ts`, default: `./${spec.entry}.js` } },
    engines: root.engines,
    dependencies: {
      ...pinned([...deps].filter((d) => !PEERS.has(d) && !PACKAGES.some((p) => p.name === d))),
      ...Object.fromEntries([...uses].sort().map((name) => [name, root.version])),
    },
    peerDependencies: pinned([...deps].filter((d) => PEERS.has(d))),
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  cpSync(join(ROOT, 'LICENSE'), join(dir, 'LICENSE'), { force: true });
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', OUT], dir).trim().split('\n').at(-1);
  return { name: spec.name, tarball: join(OUT, tarball), files: seen.size };
}

rmSync(BUILD, { recursive: true, force: true });
run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.packages.json']);
run(process.execPath, [join(ROOT, 'node_modules/tsc-alias/dist/bin/index.js'), '-p', 'tsconfig.packages.json']);
for (const spec of PACKAGES) {
  const { name, tarball, files } = pack(spec);
  process.stdout.write(`${name}: ${relative(ROOT, tarball)} (${files} files)\n`);
}
