/**
 * The import graph of libs/ and apps/, and the rules it must keep: a lib imports only the libs its
 * index.ts says it may (`@imports` in the TSDoc paragraph at its top) and only from a lower floor
 * ({@link FLOORS}), no cycle joins libs or the files of one lib, no lib imports an app, another
 * lib is reached only through its index (`@punctual/x`, never `@punctual/x/src/…`), and the pure
 * libs ({@link PURE_LIBS}) import no I/O package. Read from the sources with TypeScript's own
 * import scanner.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A folder of libs/ or apps/, or anything else (test/, scripts/, the root). */
export interface Area {
  kind: 'lib' | 'app' | 'outside';
  name: string;
}

/** One import of one file: `specifier` as written, `target` where it leads (`targetFile`: the file, for a relative import). */
export interface Edge {
  file: string;
  source: Area;
  specifier: string;
  target: Area;
  targetFile?: string;
}

/** An import of a package (not a lib, not a relative path) by one file: `name` is the package's. */
export interface PackageImport {
  file: string;
  source: Area;
  name: string;
}

/**
 * The floors of the libs, lowest first — declared here and nowhere else. A lib imports only libs
 * of lower floors: foundations (what everything reads: schedule math, the wire contract, config,
 * the metrics registry); pure decisions and process-wide services over config; the stores; the
 * services over them; the domain parts; and the roles' own libs. Apps stand above them all.
 */
export const FLOORS: readonly (readonly string[])[] = [
  ['config', 'contract', 'metrics', 'time'],
  ['client', 'logging', 'planning', 'tracing'],
  ['db', 'redis'],
  ['auth', 'clock', 'queue'],
  ['cluster', 'handlers', 'health'],
  ['bootstrap', 'scheduler', 'tasks', 'worker'],
];

/** The libs that decide without I/O: they import no package that talks to a server or is a framework. */
export const PURE_LIBS: readonly string[] = ['contract', 'planning', 'time'];

/** Packages that do I/O or bring a framework: Postgres, Redis, BullMQ, Prisma, Nest, HTTP servers. */
const IO_PACKAGE = /^(pg|pg-[a-z-]+|ioredis|bullmq|prisma|@prisma\/.+|@nestjs\/.+|express|undici|@bull-board\/.+)$/;

/** What a lib's index.ts says of it: its role, and the libs it may import (by name, `@punctual/` dropped). */
export interface LibDoc {
  role: string;
  imports: string[];
}

export interface Graph {
  /** Every lib by name, with what its index.ts says (null: no TSDoc paragraph with an `@imports` line). */
  libs: Map<string, LibDoc | null>;
  apps: string[];
  edges: Edge[];
  /** Imports of packages (read for the pure libs' rule). */
  packages?: PackageImport[];
}

const ALIAS = /^@punctual\/([a-z-]+)$/;
const DEEP = /^@punctual\/([a-z-]+)\/.+/;

/**
 * The TSDoc block an index.ts starts with: its first paragraph (the role) and its `@imports` line —
 * `@imports @punctual/a, @punctual/b`, or `@imports none`. Null when the file does not start with
 * such a block, the paragraph is empty, or the line is missing or names something else than libs.
 */
export function readLibDoc(text: string): LibDoc | null {
  const block = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text);
  if (!block) return null;
  const lines = block[1]!.split('\n').map((line) => line.replace(/^\s*\*?\s?/, '').trimEnd());
  const start = lines.findIndex((line) => line.trim() !== '');
  const end = lines.findIndex((line, i) => i >= start && (line.trim() === '' || line.trimStart().startsWith('@')));
  const role = lines
    .slice(start, end === -1 ? undefined : end)
    .join(' ')
    .trim();
  // The `@imports` line, and the lines it runs on to (a long list wraps) up to a blank line or the next tag.
  const at = lines.findIndex((line) => /^@imports\s+\S/.test(line.trim()));
  const rest = at === -1 ? [] : lines.slice(at + 1);
  const stop = rest.findIndex((line) => line.trim() === '' || /^@\w+(\s|$)/.test(line.trim()));
  const wrapped = rest.slice(0, stop === -1 ? rest.length : stop).map((l) => l.trim());
  const declared = at === -1 ? null : [lines[at]!.trim().replace(/^@imports\s+/, ''), ...wrapped].join(' ');
  if (!role || role.startsWith('@') || declared === null) return null;
  if (declared.trim() === 'none') return { role, imports: [] };
  const names = declared.split(',').map((item) => ALIAS.exec(item.trim())?.[1]);
  return names.every((name): name is string => name !== undefined) ? { role, imports: names } : null;
}

/** Which area of the repository `path` (absolute) lies in. */
function areaOf(path: string): Area {
  const [top, name] = relative(ROOT, path).split(/[\\/]/);
  if ((top === 'libs' || top === 'apps') && name) return { kind: top === 'libs' ? 'lib' : 'app', name };
  return { kind: 'outside', name: top ?? '' };
}

function sourceFiles(dir: string, extensions: RegExp): string[] {
  if (!existsSync(dir)) return [];
  return (
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      // Generated code (the Prisma client) keeps its generator's shape, not ours.
      .filter(
        (file) =>
          extensions.test(file) &&
          !/\.(spec|spec-helper|test)\.tsx?$/.test(file) &&
          !file.endsWith('.d.ts') &&
          !/(^|[\\/])generated[\\/]/.test(file),
      )
      .map((file) => join(dir, file))
  );
}

/** The graph as the sources have it now: every lib's doc and every import of lib and app sources (specs left out). */
export function readGraph(root = ROOT): Graph {
  const folders = (top: string) =>
    readdirSync(join(root, top), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  const libs = new Map(
    folders('libs').map((name) => {
      const index = join(root, 'libs', name, 'src', 'index.ts');
      return [name, existsSync(index) ? readLibDoc(readFileSync(index, 'utf8')) : null] as const;
    }),
  );
  const apps = folders('apps');
  const edges: Edge[] = [];
  const packages: PackageImport[] = [];
  const files = [
    ...[...libs.keys()].flatMap((name) => sourceFiles(join(root, 'libs', name, 'src'), /\.ts$/)),
    ...apps.flatMap((name) => sourceFiles(join(root, 'apps', name, 'src'), /\.tsx?$/)),
  ];
  for (const file of files) {
    const source = areaOf(file);
    for (const { fileName: specifier } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      const alias = ALIAS.exec(specifier) ?? DEEP.exec(specifier);
      if (alias) {
        edges.push({ file: relative(root, file), source, specifier, target: { kind: 'lib', name: alias[1]! } });
      } else if (specifier.startsWith('.')) {
        const path = resolve(dirname(file), specifier);
        edges.push({
          file: relative(root, file),
          source,
          specifier,
          target: areaOf(path),
          targetFile: relative(root, path).replace(/\.js$/, '.ts'),
        });
      } else if (!specifier.startsWith('node:')) {
        packages.push({ file: relative(root, file), source, name: packageName(specifier) });
      }
    }
  }
  return { libs, apps, edges, packages };
}

const sameArea = (a: Area, b: Area) => a.kind === b.kind && a.name === b.name;

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The floor of a lib (its index in {@link FLOORS}), or -1 when it is on none. */
export function floorOf(lib: string, floors: readonly (readonly string[])[] = FLOORS): number {
  return floors.findIndex((floor) => floor.includes(lib));
}

/**
 * The cycles among libs: one per group of libs that reach one another (a strongly connected
 * component), as the shortest path from its first lib back to it, `[a, b, a]`.
 */
export function libCycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.source.kind === 'lib' && e.target.kind === 'lib' && e.source.name !== e.target.name)
      next.set(e.source.name, (next.get(e.source.name) ?? new Set()).add(e.target.name));
  }
  return cyclesOf(next);
}

/**
 * The cycles among the files of each lib (relative imports within it, type-only ones too: a cycle
 * of types is one of meaning), each as `[a.ts, b.ts, a.ts]`.
 */
export function fileCycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.source.kind === 'lib' && sameArea(e.source, e.target) && e.targetFile && e.targetFile !== e.file)
      next.set(e.file, (next.get(e.file) ?? new Set()).add(e.targetFile));
  }
  return cyclesOf(next);
}

/** The cycles of a directed graph: one per strongly connected component, as its shortest cycle. */
function cyclesOf(next: Map<string, Set<string>>): string[][] {
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (lib: string) => {
    index.set(lib, index.size);
    low.set(lib, index.get(lib)!);
    stack.push(lib);
    for (const to of next.get(lib) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(lib, Math.min(low.get(lib)!, low.get(to)!));
      } else if (stack.includes(to)) low.set(lib, Math.min(low.get(lib)!, index.get(to)!));
    }
    if (low.get(lib) !== index.get(lib)) return;
    const component: string[] = [];
    for (let top = stack.pop()!; ; top = stack.pop()!) {
      component.unshift(top);
      if (top === lib) break;
    }
    if (component.length > 1) cycles.push(shortestCycle(component.sort(), next));
  };
  for (const lib of [...next.keys()].sort()) if (!index.has(lib)) visit(lib);
  return cycles;
}

/** The shortest path from the component's first lib back to itself, within the component (breadth first). */
function shortestCycle(component: string[], next: Map<string, Set<string>>): string[] {
  const [start] = component as [string];
  const inside = new Set(component);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const to of next.get(queue[i]!) ?? []) {
      if (!inside.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let at = queue[i]!; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, queue[i]!);
        queue.push(to);
      }
    }
  }
  return [...component, start];
}

/** Every broken rule of `graph`, one line each; none when the graph keeps them all. */
export function violations(
  graph: Graph,
  floors: readonly (readonly string[])[] = FLOORS,
  pure: readonly string[] = PURE_LIBS,
): string[] {
  const found: string[] = [];
  for (const lib of graph.libs.keys())
    if (floorOf(lib, floors) === -1)
      found.push(`libs/${lib} is on no floor: add it to FLOORS in test/architecture/import-graph.ts`);
  for (const { file, source, name } of graph.packages ?? []) {
    if (source.kind === 'lib' && pure.includes(source.name) && IO_PACKAGE.test(name))
      found.push(
        `${file} imports ${name}: libs/${source.name} decides without I/O and imports no I/O package or framework`,
      );
  }
  for (const [lib, doc] of graph.libs) {
    if (!doc)
      found.push(
        `libs/${lib}/src/index.ts does not start with a TSDoc paragraph saying its role and an "@imports @punctual/…" (or "@imports none") line`,
      );
    for (const name of doc?.imports ?? [])
      if (!graph.libs.has(name))
        found.push(`libs/${lib}/src/index.ts: @imports names @punctual/${name}, which is no lib`);
  }
  const used = new Map<string, Set<string>>();
  for (const edge of graph.edges) {
    const { file, source, target, specifier } = edge;
    if (sameArea(source, target)) {
      if (specifier.startsWith('@punctual/'))
        found.push(
          `${file} imports ${specifier}: its own lib, through the index (a cycle in the making); import the file`,
        );
      continue;
    }
    if (source.kind === 'lib' && target.kind === 'app') {
      found.push(`${file} imports ${specifier}: a lib never imports an app (apps/${target.name})`);
      continue;
    }
    if (target.kind === 'outside') {
      found.push(`${file} imports ${specifier}, outside libs/ and apps/`);
      continue;
    }
    if (source.kind === 'app' && target.kind === 'app') {
      found.push(`${file} imports ${specifier}: an app never imports another app (apps/${target.name})`);
      continue;
    }
    if (!specifier.startsWith('@punctual/'))
      found.push(`${file} imports ${specifier}: another lib is reached through its index, as @punctual/${target.name}`);
    else if (DEEP.test(specifier))
      found.push(
        `${file} imports ${specifier}: a lib's insides are reached through its index, as @punctual/${target.name}`,
      );
    if (!graph.libs.has(target.name)) {
      found.push(`${file} imports ${specifier}, which is no lib`);
      continue;
    }
    if (source.kind !== 'lib') continue;
    used.set(source.name, (used.get(source.name) ?? new Set()).add(target.name));
    const [from, to] = [floorOf(source.name, floors), floorOf(target.name, floors)];
    if (from !== -1 && to !== -1 && to >= from) {
      found.push(
        `${file} imports @punctual/${target.name}: libs/${source.name} is on floor ${from}, @punctual/${target.name} on floor ${to}; a lib imports only from lower floors`,
      );
    }
    const allowed = graph.libs.get(source.name)?.imports;
    if (allowed && !allowed.includes(target.name))
      found.push(
        `${file} imports @punctual/${target.name}, which libs/${source.name}/src/index.ts does not list in @imports`,
      );
  }
  for (const [lib, doc] of graph.libs) {
    for (const name of doc?.imports ?? []) {
      if (graph.libs.has(name) && !used.get(lib)?.has(name))
        found.push(
          `libs/${lib}/src/index.ts lists @punctual/${name} in @imports, but nothing of libs/${lib} imports it`,
        );
    }
  }
  for (const cycle of libCycles(graph.edges)) found.push(`a cycle between libs: ${cycle.join(' → ')}`);
  for (const cycle of fileCycles(graph.edges)) found.push(`a cycle between files of a lib: ${cycle.join(' → ')}`);
  return found;
}
