import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './import-graph.js';

/** The longest line a code file may have: Prettier wraps code at 120; what it cannot wrap (a long string) is split by hand. */
const LONGEST = 200;
const SKIP = new Set(['node_modules', 'dist', 'generated', 'artifacts', 'results', '.packs']);

/** Every code file of the tree (what `npm run format` formats), relative to the root. */
function codeFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name) || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return codeFiles(path);
    return /\.(ts|tsx|js|mjs|cjs)$/.test(entry.name) ? [path] : [];
  });
}

describe('the code reads on a screen', () => {
  it(`has no line longer than ${LONGEST} characters`, () => {
    const files = ['apps', 'libs', 'test', 'bench', 'chaos', 'scripts'].flatMap(codeFiles);
    expect(files.length).toBeGreaterThan(300);
    const long = files.flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (line.length > LONGEST ? [`${relative('.', file)}:${i + 1} (${line.length})`] : [])),
    );
    expect(long).toEqual([]);
  });
});
