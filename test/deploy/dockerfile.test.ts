import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { builtinModules } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from './manifests.js';

/** No Docker engine runs the tests: the Dockerfile is checked by reading it, instruction by instruction. */
type Instruction = { op: string; args: string };
type Stage = { image: string; name: string | undefined; instructions: Instruction[] };

function stages(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const result: Stage[] = [];
  for (const line of lines) {
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line)!;
    if (op!.toUpperCase() === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args!)!;
      result.push({ image: image!, name, instructions: [] });
    } else result.at(-1)?.instructions.push({ op: op!.toUpperCase(), args: args! });
  }
  return result;
}

const dockerfile = stages(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runtime = dockerfile.at(-1)!;
const stage = (name: string) => dockerfile.find((s) => s.name === name)!;
const all = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op).map((i) => i.args);
/** A stage and the stages it is built FROM. */
const lineage = (s: Stage): Stage[] => [
  s,
  ...(dockerfile.some((d) => d.name === s.image) ? lineage(stage(s.image)) : []),
];
const copyFrom = (s: Stage, target: string) =>
  all(s, 'COPY')
    .map((a) => /^(?:--\S+\s+)*?--from=(\S+)\s+(?:--\S+\s+)*(\S+)\s+(\S+)$/.exec(a))
    .find((m) => m?.[3]?.replace(/\/$/, '') === target)?.[1];
const SCRIPTS = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;

/** Paths that `.dockerignore` keeps out of the build context (a pattern also covers everything below it). */
const ignored = (() => {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const regex = (p: string) =>
    new RegExp(
      `^${p
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*/g, '\u0000')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')
        .replace(/\u0000/g, '.*')}$`,
    );
  return (path: string) => {
    const prefixes = path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
    let out = false;
    for (const p of patterns)
      if (prefixes.some((prefix) => regex(p.replace(/^!/, '').replace(/\/$/, '')).test(prefix)))
        out = !p.startsWith('!');
    return out;
  };
})();

describe('Dockerfile', () => {
  it('builds in stages on node:20-slim', () => {
    expect(dockerfile.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile[0]!.image).toBe('node:20-slim');
    dockerfile.forEach((s, i) =>
      expect(s.image === 'node:20-slim' || dockerfile.slice(0, i).some((e) => e.name === s.image), s.image).toBe(true),
    );
  });

  it('compiles with every dependency, and ships production dependencies only', () => {
    const dist = copyFrom(runtime, './dist');
    const modules = copyFrom(runtime, './node_modules');
    expect(dist && modules).toBeTruthy();
    const runs = (name: string) =>
      lineage(stage(name))
        .flatMap((s) => all(s, 'RUN'))
        .join('\n');
    expect(runs(dist!)).toMatch(/\bnpm ci\b/);
    expect(runs(dist!)).toMatch(/\bnpm run build\b/);
    expect(runs(modules!)).toMatch(/\bnpm ci --omit=dev\b/);
    expect(runs(modules!).replace(/npm ci --omit=dev/g, '')).not.toMatch(/npm (ci|install|i)\b/);
    // `prisma migrate deploy` needs the schema engine, and the runtime filesystem is read-only.
    expect(runs(modules!)).toMatch(/schema-engine/);
    expect(all(runtime, 'RUN').join('\n')).not.toMatch(/\bnpm\b/);
  });

  it('runs as a numeric non-root user, in production mode, the API by default', () => {
    const [user] = all(runtime, 'USER');
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user!.split(':')[0])).toBeGreaterThan(0);
    expect(
      lineage(runtime)
        .flatMap((s) => all(s, 'ENV'))
        .join(' '),
    ).toMatch(/\bNODE_ENV=production\b/);
    expect(JSON.parse(all(runtime, 'CMD')[0]!)).toEqual(SCRIPTS['start:api']!.split(' '));
  });

  it('copies from the build context only what the context holds', () => {
    const sources = dockerfile
      .flatMap((s) => all(s, 'COPY'))
      .filter((a) => !a.includes('--from='))
      .flatMap((a) =>
        a
          .split(/\s+/)
          .filter((w) => !w.startsWith('--'))
          .slice(0, -1),
      );
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(existsSync(join(ROOT, source)), source).toBe(true);
      expect(ignored(source), `${source} is in .dockerignore`).toBe(false);
    }
    for (const secretOrBulk of ['.env', 'node_modules', 'dist', '.git', 'test', 'libs/db/src/generated'])
      expect(ignored(secretOrBulk), secretOrBulk).toBe(true);
  });
});

describe('Dockerfile HEALTHCHECK', () => {
  const [healthcheck] = all(runtime, 'HEALTHCHECK');
  const script = /"(scripts\/[\w.-]+)"/.exec(healthcheck ?? '')?.[1];
  let server: Server | undefined;
  afterEach(() => server?.close());

  const serve = async (status: number) => {
    server = createServer((req, res) => res.writeHead(req.url === '/health/live' ? status : 404).end());
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };
  /** The script's exit status; run asynchronously, since the server answering it lives in this process. */
  const check = (env: Record<string, string>) =>
    new Promise<number | null>((resolve) =>
      spawn('node', [join(ROOT, script!)], { env: { ...process.env, ...env }, timeout: 10_000 }).on('exit', resolve),
    );

  it('runs a script the image contains', () => {
    expect(healthcheck).toMatch(/CMD \["node", "scripts\/[\w.-]+"\]/);
    expect(all(runtime, 'COPY').some((a) => a.split(/\s+/).includes(script!))).toBe(true);
  });

  it('passes when /health/live answers on HEALTH_PORT (scheduler, worker) or PORT (API), fails otherwise', async () => {
    const closed = await serve(200).then(
      (port) => new Promise<number>((resolve) => server!.close(() => resolve(port))),
    );
    expect(await check({ PORT: String(closed), HEALTH_PORT: String(closed) })).toBe(1);
    const live = await serve(200);
    expect(await check({ PORT: String(closed), HEALTH_PORT: String(live) })).toBe(0);
    expect(await check({ PORT: String(live), HEALTH_PORT: String(closed) })).toBe(0);
    server!.close();
    const failing = await serve(503);
    expect(await check({ PORT: String(closed), HEALTH_PORT: String(failing) })).toBe(1);
  });
});

describe('production dependencies', () => {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages as Record<
    string,
    { dev?: boolean }
  >;
  const sources = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && /\.ts$/.test(e.name) && !/\.(spec|test|d)\.ts$/.test(e.name))
      .map((e) => relative(ROOT, join(e.parentPath, e.name)));

  /** Packages a compiled file loads at run time (type-only imports vanish in compilation). */
  const runtimeImports = (file: string): string[] => {
    const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.ES2022);
    const found: string[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node)) {
        const clause = node.importClause;
        const typeOnly =
          clause?.isTypeOnly ||
          (clause &&
            !clause.name &&
            clause.namedBindings &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly));
        if (!typeOnly) found.push((node.moduleSpecifier as ts.StringLiteral).text);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
        found.push((node.moduleSpecifier as ts.StringLiteral).text);
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        ts.isStringLiteral(node.arguments[0]!)
      ) {
        found.push(node.arguments[0].text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  };
  const packageOf = (specifier: string) =>
    specifier
      .split('/')
      .slice(0, specifier.startsWith('@') ? 2 : 1)
      .join('/');
  const external = (s: string) =>
    !s.startsWith('.') &&
    !s.startsWith('@punctual/') &&
    !s.startsWith('node:') &&
    !builtinModules.includes(s.split('/')[0]!);

  it('include every package the apps and libs load, so `npm ci --omit=dev` leaves nothing out', () => {
    // The console is bundled by Vite at build time: the image serves its built files, not its imports.
    const files = [...sources('apps').filter((f) => !f.startsWith('apps/console/')), ...sources('libs')];
    expect(files.length).toBeGreaterThan(20);
    const packages = new Set(files.flatMap(runtimeImports).filter(external).map(packageOf));
    expect([...packages]).toEqual(expect.arrayContaining(['@nestjs/core', 'bullmq', 'ioredis', 'pg']));
    const missing = [...packages].filter((name) => !lock[`node_modules/${name}`] || lock[`node_modules/${name}`]!.dev);
    expect(missing).toEqual([]);
  });

  it('are told apart from development ones (the check above can fail)', () => {
    expect(lock['node_modules/vitest']?.dev).toBe(true);
    expect(runtimeImports('test/deploy/dockerfile.test.ts').filter(external).map(packageOf)).toContain('vitest');
  });
});
