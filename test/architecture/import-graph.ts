/**
 * The import graph of libs/ and apps/, and the rules it must keep: a lib imports only the libs its
 * index.ts says it may (`@imports` in the TSDoc paragraph at its top), no cycle joins libs, and
 * no lib imports an app. Read from the sources with TypeScript's own import scanner.
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

/** One import of one file: `specifier` as written, `target` where it leads. */
export interface Edge {
  file: string;
  source: Area;
  specifier: string;
  target: Area;
}

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
}

const ALIAS = /^@punctual\/([a-z-]+)$/;

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
  const role = lines.slice(start, end === -1 ? undefined : end).join(' ').trim();
  const declared = lines.map((line) => /^@imports\s+(.+)$/.exec(line.trim())).find(Boolean);
  if (!role || role.startsWith('@') || !declared) return null;
  if (declared[1]!.trim() === 'none') return { role, imports: [] };
  const names = declared[1]!.split(',').map((item) => ALIAS.exec(item.trim())?.[1]);
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
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => extensions.test(file) && !/\.(spec|spec-helper|test)\.tsx?$/.test(file) && !file.endsWith('.d.ts'))
    .map((file) => join(dir, file));
}

/** The graph as the sources have it now: every lib's doc and every import of lib and app sources (specs left out). */
export function readGraph(root = ROOT): Graph {
  const folders = (top: string) => readdirSync(join(root, top), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  const libs = new Map(folders('libs').map((name) => {
    const index = join(root, 'libs', name, 'src', 'index.ts');
    return [name, existsSync(index) ? readLibDoc(readFileSync(index, 'utf8')) : null] as const;
  }));
  const apps = folders('apps');
  const edges: Edge[] = [];
  const files = [...[...libs.keys()].flatMap((name) => sourceFiles(join(root, 'libs', name, 'src'), /\.ts$/)), ...apps.flatMap((name) => sourceFiles(join(root, 'apps', name, 'src'), /\.tsx?$/))];
  for (const file of files) {
    const source = areaOf(file);
    for (const { fileName: specifier } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      const alias = ALIAS.exec(specifier);
      const target: Area | null = alias ? { kind: 'lib', name: alias[1]! } : specifier.startsWith('.') ? areaOf(resolve(dirname(file), specifier)) : null;
      if (target) edges.push({ file: relative(root, file), source, specifier, target });
    }
  }
  return { libs, apps, edges };
}

const sameArea = (a: Area, b: Area) => a.kind === b.kind && a.name === b.name;

/**
 * The cycles among libs: one per group of libs that reach one another (a strongly connected
 * component), as the shortest path from its first lib back to it, `[a, b, a]`.
 */
export function libCycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.source.kind === 'lib' && e.target.kind === 'lib' && e.source.name !== e.target.name) next.set(e.source.name, (next.get(e.source.name) ?? new Set()).add(e.target.name));
  }
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
export function violations(graph: Graph): string[] {
  const found: string[] = [];
  for (const [lib, doc] of graph.libs) {
    if (!doc) found.push(`libs/${lib}/src/index.ts does not start with a TSDoc paragraph saying its role and an "@imports @punctual/…" (or "@imports none") line`);
    for (const name of doc?.imports ?? []) if (!graph.libs.has(name)) found.push(`libs/${lib}/src/index.ts: @imports names @punctual/${name}, which is no lib`);
  }
  const used = new Map<string, Set<string>>();
  for (const edge of graph.edges) {
    const { file, source, target, specifier } = edge;
    if (sameArea(source, target)) {
      if (specifier.startsWith('@punctual/')) found.push(`${file} imports ${specifier}: its own lib, through the index (a cycle in the making); import the file`);
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
    if (!specifier.startsWith('@punctual/')) found.push(`${file} imports ${specifier}: another lib is reached through its index, as @punctual/${target.name}`);
    if (!graph.libs.has(target.name)) {
      found.push(`${file} imports ${specifier}, which is no lib`);
      continue;
    }
    if (source.kind !== 'lib') continue;
    used.set(source.name, (used.get(source.name) ?? new Set()).add(target.name));
    const allowed = graph.libs.get(source.name)?.imports;
    if (allowed && !allowed.includes(target.name)) found.push(`${file} imports @punctual/${target.name}, which libs/${source.name}/src/index.ts does not list in @imports`);
  }
  for (const [lib, doc] of graph.libs) {
    for (const name of doc?.imports ?? []) {
      if (graph.libs.has(name) && !used.get(lib)?.has(name)) found.push(`libs/${lib}/src/index.ts lists @punctual/${name} in @imports, but nothing of libs/${lib} imports it`);
    }
  }
  for (const cycle of libCycles(graph.edges)) found.push(`a cycle between libs: ${cycle.join(' → ')}`);
  return found;
}
