import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import {
  type Area,
  type Edge,
  FLOORS,
  type Graph,
  type LibDoc,
  libCycles,
  PURE_LIBS,
  readGraph,
  readLibDoc,
  ROOT,
  violations,
} from './import-graph.js';

const lib = (name: string): Area => ({ kind: 'lib', name });
const app = (name: string): Area => ({ kind: 'app', name });
const edge = (source: Area, specifier: string, target: Area): Edge => ({
  file: `${source.kind}s/${source.name}/src/x.ts`,
  source,
  specifier,
  target,
});
const doc = (...imports: string[]): LibDoc => ({ role: 'A role.', imports });

describe('the import graph of libs/ and apps/', () => {
  const graph = readGraph();

  it('reads every lib and app, and the imports between them', () => {
    expect([...graph.libs.keys()]).toEqual(expect.arrayContaining(['config', 'db', 'metrics', 'scheduler', 'worker']));
    expect(graph.apps).toEqual(expect.arrayContaining(['api', 'scheduler', 'worker']));
    expect(graph.edges).toContainEqual(
      expect.objectContaining({
        file: 'libs/scheduler/src/leader-elector.ts',
        specifier: '@punctual/metrics',
        target: lib('metrics'),
      }),
    );
  });

  it('keeps every rule: each lib imports what its index.ts allows and only from a lower floor, no cycle of libs or of files, no lib imports an app, no pure lib does I/O', () => {
    expect(violations(graph)).toEqual([]);
  });

  it('puts every lib on exactly one floor, and the pure libs on the lowest two', () => {
    const placed = FLOORS.flat();
    expect(new Set(placed).size).toBe(placed.length);
    expect([...placed].sort()).toEqual([...graph.libs.keys()].sort());
    for (const lib of PURE_LIBS) expect(FLOORS.slice(0, 2).flat()).toContain(lib);
  });
});

/** Floors of the made-up graphs below: a over b over c; config and contract under db. */
const TEST_FLOORS = [
  ['config', 'contract', 'c'],
  ['b', 'redis'],
  ['db', 'a', 'bare'],
];
const check = (graph: Graph) => violations(graph, TEST_FLOORS, ['contract']);

describe('the checks, on graphs made to break them', () => {
  const clean: Graph = {
    libs: new Map([
      ['config', doc()],
      ['db', doc('config')],
    ]),
    apps: ['api'],
    edges: [edge(lib('db'), '@punctual/config', lib('config')), edge(app('api'), '@punctual/db', lib('db'))],
  };

  it('pass a graph that keeps the rules', () => {
    expect(check(clean)).toEqual([]);
  });

  it('refuse an import the TSDoc does not allow, and an allowance nothing uses', () => {
    const graph: Graph = { ...clean, libs: new Map([...clean.libs, ['db', doc('redis')], ['redis', doc()]]) };
    expect(check(graph)).toEqual([
      'libs/db/src/x.ts imports @punctual/config, which libs/db/src/index.ts does not list in @imports',
      'libs/db/src/index.ts lists @punctual/redis in @imports, but nothing of libs/db imports it',
    ]);
  });

  it('refuse a cycle between libs, however long', () => {
    const graph: Graph = {
      libs: new Map([
        ['a', doc('b')],
        ['b', doc('c')],
        ['c', doc('a')],
      ]),
      apps: [],
      edges: [
        edge(lib('a'), '@punctual/b', lib('b')),
        edge(lib('b'), '@punctual/c', lib('c')),
        edge(lib('c'), '@punctual/a', lib('a')),
      ],
    };
    expect(check(graph)).toEqual([
      'libs/c/src/x.ts imports @punctual/a: libs/c is on floor 0, @punctual/a on floor 2; a lib imports only from lower floors',
      'a cycle between libs: a → b → c → a',
    ]);
    expect(libCycles(clean.edges)).toEqual([]);
  });

  it('refuse a lib that imports an app, or another lib by a relative path', () => {
    const graph: Graph = {
      ...clean,
      edges: [
        ...clean.edges,
        edge(lib('db'), '../../../apps/api/src/main.js', app('api')),
        edge(lib('db'), '../../config/src/config.js', lib('config')),
      ],
    };
    expect(check(graph)).toEqual([
      'libs/db/src/x.ts imports ../../../apps/api/src/main.js: a lib never imports an app (apps/api)',
      'libs/db/src/x.ts imports ../../config/src/config.js: another lib is reached through its index, as @punctual/config',
    ]);
  });

  it('refuse an index.ts without its paragraph', () => {
    const graph: Graph = { ...clean, libs: new Map([...clean.libs, ['bare', null]]) };
    expect(check(graph)).toEqual([
      'libs/bare/src/index.ts does not start with a TSDoc paragraph saying its role and an "@imports @punctual/…" (or "@imports none") line',
    ]);
  });

  it('refuse an import from the same floor or a higher one, and a lib on no floor', () => {
    const graph: Graph = {
      libs: new Map([...clean.libs, ['redis', doc('db')], ['stray', doc()]]),
      apps: [],
      edges: [...clean.edges, edge(lib('redis'), '@punctual/db', lib('db'))],
    };
    expect(check(graph)).toEqual([
      'libs/stray is on no floor: add it to FLOORS in test/architecture/import-graph.ts',
      'libs/redis/src/x.ts imports @punctual/db: libs/redis is on floor 1, @punctual/db on floor 2; a lib imports only from lower floors',
    ]);
    const sideways: Graph = {
      libs: new Map([
        ['b', doc('redis')],
        ['redis', doc()],
      ]),
      apps: [],
      edges: [edge(lib('b'), '@punctual/redis', lib('redis'))],
    };
    expect(check(sideways)).toEqual([
      'libs/b/src/x.ts imports @punctual/redis: libs/b is on floor 1, @punctual/redis on floor 1; a lib imports only from lower floors',
    ]);
  });

  it('refuse a deep import into another lib', () => {
    const graph: Graph = {
      ...clean,
      edges: [...clean.edges, edge(lib('db'), '@punctual/config/src/config.js', lib('config'))],
    };
    expect(check(graph)).toEqual([
      "libs/db/src/x.ts imports @punctual/config/src/config.js: a lib's insides are reached through its index, as @punctual/config",
    ]);
  });

  it('refuse an I/O package or a framework in a pure lib, and allow it elsewhere', () => {
    const graph: Graph = {
      ...clean,
      libs: new Map([...clean.libs, ['contract', doc()]]),
      packages: [
        { file: 'libs/contract/src/x.ts', source: lib('contract'), name: '@nestjs/common' },
        { file: 'libs/contract/src/y.ts', source: lib('contract'), name: 'pg' },
        { file: 'libs/contract/src/z.ts', source: lib('contract'), name: 'zod' },
        { file: 'libs/db/src/x.ts', source: lib('db'), name: 'pg' },
      ],
    };
    expect(check(graph)).toEqual([
      'libs/contract/src/x.ts imports @nestjs/common: libs/contract decides without I/O and imports no I/O package or framework',
      'libs/contract/src/y.ts imports pg: libs/contract decides without I/O and imports no I/O package or framework',
    ]);
  });

  it('refuse a cycle between the files of one lib, type-only imports included', () => {
    const fileEdge = (from: string, to: string): Edge => ({
      file: `libs/db/src/${from}`,
      source: lib('db'),
      specifier: `./${to.replace('.ts', '.js')}`,
      target: lib('db'),
      targetFile: `libs/db/src/${to}`,
    });
    const graph: Graph = {
      ...clean,
      edges: [...clean.edges, fileEdge('a.ts', 'b.ts'), fileEdge('b.ts', 'a.ts'), fileEdge('b.ts', 'c.ts')],
    };
    expect(check(graph)).toEqual([
      'a cycle between files of a lib: libs/db/src/a.ts → libs/db/src/b.ts → libs/db/src/a.ts',
    ]);
  });

  it('read the paragraph only in its fixed form, at the top of the file', () => {
    const block = (...lines: string[]) => `/**\n${lines.map((l) => ` * ${l}`.trimEnd()).join('\n')}\n */\nexport {};\n`;
    expect(
      readLibDoc(
        block(
          'Postgres, through',
          'repositories.',
          '',
          '@imports @punctual/config, @punctual/metrics',
          '@packageDocumentation',
        ),
      ),
    ).toEqual({
      role: 'Postgres, through repositories.',
      imports: ['config', 'metrics'],
    });
    expect(readLibDoc(block('Pure.', '', '@imports none'))).toEqual({ role: 'Pure.', imports: [] });
    expect(
      readLibDoc(block('Wrapped.', '', '@imports @punctual/config,', '  @punctual/db', '@packageDocumentation')),
    ).toEqual({
      role: 'Wrapped.',
      imports: ['config', 'db'],
    });
    expect(readLibDoc(block('No imports line.'))).toBeNull();
    expect(readLibDoc(block('@imports none'))).toBeNull();
    expect(readLibDoc(block('Imports by path.', '', '@imports libs/config'))).toBeNull();
    expect(readLibDoc(`export {};\n${block('Not at the top.', '', '@imports none')}`)).toBeNull();
  });
});

describe('each lib is wired the same way', () => {
  const libs = [...readGraph().libs.keys()];
  const paths = (
    ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile).config as {
      compilerOptions: { paths: Record<string, string[]> };
    }
  ).compilerOptions.paths;
  const projects = (
    JSON.parse(readFileSync(join(ROOT, 'nest-cli.json'), 'utf8')) as {
      projects: Record<string, { type: string; root: string; sourceRoot: string }>;
    }
  ).projects;

  it('has src/index.ts, the alias @punctual/<name> in tsconfig.json, and a library project in nest-cli.json', () => {
    for (const name of libs) {
      expect(existsSync(join(ROOT, 'libs', name, 'src', 'index.ts')), name).toBe(true);
      expect(paths[`@punctual/${name}`], name).toEqual([`./libs/${name}/src/index.ts`]);
      expect(projects[name], name).toMatchObject({
        type: 'library',
        root: `libs/${name}`,
        sourceRoot: `libs/${name}/src`,
      });
    }
  });

  it('leaves no alias or project behind for a lib that is gone', () => {
    expect(Object.keys(paths).filter((alias) => !libs.includes(alias.replace('@punctual/', '')))).toEqual([]);
    expect(Object.entries(projects).filter(([name, p]) => p.type === 'library' && !libs.includes(name))).toEqual([]);
  });
});
