import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { type Area, type Edge, type Graph, type LibDoc, libCycles, readGraph, readLibDoc, ROOT, violations } from './import-graph.js';

const lib = (name: string): Area => ({ kind: 'lib', name });
const app = (name: string): Area => ({ kind: 'app', name });
const edge = (source: Area, specifier: string, target: Area): Edge => ({ file: `${source.kind}s/${source.name}/src/x.ts`, source, specifier, target });
const doc = (...imports: string[]): LibDoc => ({ role: 'A role.', imports });

describe('the import graph of libs/ and apps/', () => {
  const graph = readGraph();

  it('reads every lib and app, and the imports between them', () => {
    expect([...graph.libs.keys()]).toEqual(expect.arrayContaining(['config', 'db', 'metrics', 'scheduler', 'worker']));
    expect(graph.apps).toEqual(expect.arrayContaining(['api', 'scheduler', 'worker']));
    expect(graph.edges).toContainEqual(expect.objectContaining({ file: 'libs/scheduler/src/leader-elector.ts', specifier: '@punctual/metrics', target: lib('metrics') }));
  });

  it('keeps every rule: each lib imports what its index.ts allows, no cycle, no lib imports an app', () => {
    expect(violations(graph)).toEqual([]);
  });
});

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
    expect(violations(clean)).toEqual([]);
  });

  it('refuse an import the TSDoc does not allow, and an allowance nothing uses', () => {
    const graph: Graph = { ...clean, libs: new Map([...clean.libs, ['db', doc('redis')], ['redis', doc()]]) };
    expect(violations(graph)).toEqual([
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
      edges: [edge(lib('a'), '@punctual/b', lib('b')), edge(lib('b'), '@punctual/c', lib('c')), edge(lib('c'), '@punctual/a', lib('a'))],
    };
    expect(violations(graph)).toEqual(['a cycle between libs: a → b → c → a']);
    expect(libCycles(clean.edges)).toEqual([]);
  });

  it('refuse a lib that imports an app, or another lib by a relative path', () => {
    const graph: Graph = {
      ...clean,
      edges: [...clean.edges, edge(lib('db'), '../../../apps/api/src/main.js', app('api')), edge(lib('db'), '../../config/src/config.js', lib('config'))],
    };
    expect(violations(graph)).toEqual([
      'libs/db/src/x.ts imports ../../../apps/api/src/main.js: a lib never imports an app (apps/api)',
      'libs/db/src/x.ts imports ../../config/src/config.js: another lib is reached through its index, as @punctual/config',
    ]);
  });

  it('refuse an index.ts without its paragraph', () => {
    const graph: Graph = { ...clean, libs: new Map([...clean.libs, ['bare', null]]) };
    expect(violations(graph)).toEqual(['libs/bare/src/index.ts does not start with a TSDoc paragraph saying its role and an "@imports @punctual/…" (or "@imports none") line']);
  });

  it('read the paragraph only in its fixed form, at the top of the file', () => {
    const block = (...lines: string[]) => `/**\n${lines.map((l) => ` * ${l}`.trimEnd()).join('\n')}\n */\nexport {};\n`;
    expect(readLibDoc(block('Postgres, through', 'repositories.', '', '@imports @punctual/config, @punctual/metrics', '@packageDocumentation'))).toEqual({
      role: 'Postgres, through repositories.',
      imports: ['config', 'metrics'],
    });
    expect(readLibDoc(block('Pure.', '', '@imports none'))).toEqual({ role: 'Pure.', imports: [] });
    expect(readLibDoc(block('No imports line.'))).toBeNull();
    expect(readLibDoc(block('@imports none'))).toBeNull();
    expect(readLibDoc(block('Imports by path.', '', '@imports libs/config'))).toBeNull();
    expect(readLibDoc(`export {};\n${block('Not at the top.', '', '@imports none')}`)).toBeNull();
  });
});

describe('each lib is wired the same way', () => {
  const libs = [...readGraph().libs.keys()];
  const paths = (ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile).config as { compilerOptions: { paths: Record<string, string[]> } }).compilerOptions.paths;
  const projects = (JSON.parse(readFileSync(join(ROOT, 'nest-cli.json'), 'utf8')) as { projects: Record<string, { type: string; root: string; sourceRoot: string }> }).projects;

  it('has src/index.ts, the alias @punctual/<name> in tsconfig.json, and a library project in nest-cli.json', () => {
    for (const name of libs) {
      expect(existsSync(join(ROOT, 'libs', name, 'src', 'index.ts')), name).toBe(true);
      expect(paths[`@punctual/${name}`], name).toEqual([`./libs/${name}/src/index.ts`]);
      expect(projects[name], name).toMatchObject({ type: 'library', root: `libs/${name}`, sourceRoot: `libs/${name}/src` });
    }
  });

  it('leaves no alias or project behind for a lib that is gone', () => {
    expect(Object.keys(paths).filter((alias) => !libs.includes(alias.replace('@punctual/', '')))).toEqual([]);
    expect(Object.entries(projects).filter(([name, p]) => p.type === 'library' && !libs.includes(name))).toEqual([]);
  });
});
