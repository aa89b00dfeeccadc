import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runScript } from '../support/run-script.js';

/** Runs `node dist/bench/run.js ARGS` to its end: exit code and output. */
const bench = (args: string[]) => runScript('dist/bench/run.js', args);

/** Every scenario, in the order `npm run bench` runs them. */
const SCENARIOS = [
  'precision',
  'load',
  'load-api',
  'overload',
  'burst',
  'throughput',
  'worker-overhead',
  'schedule-math',
  'failover',
  'scale',
  'campaign',
  'shards',
  'flow',
];
/** The quick run split in two of about the same length, run side by side (timings are not judged here). */
const HALVES = [SCENARIOS.slice(0, 4), SCENARIOS.slice(4)];

/**
 * `npm run bench -- --quick` runs every scenario small and checks only correctness (every slot
 * accounted for, nothing doubled or lost). Its timings are not judged here: they are noise at
 * this size, and timings belong in the benchmark's report — so the scenarios run in two
 * processes side by side, each scenario in databases and key prefixes of its own. It is the long
 * project's (`npm run test:long`), not `npm test`'s: three minutes of two processes would crowd the
 * fault tests' timings.
 */
describe('npm run bench -- --quick', () => {
  it('runs every scenario beside its peer and breaks no promise', { timeout: 300_000 }, async () => {
    const runs = await Promise.all(
      HALVES.map(async (half) => {
        const out = mkdtempSync(join(tmpdir(), 'punctual-bench-'));
        const { code, output } = await bench(['--quick', '--only', half.join(','), '--out', out]);
        expect(code, output).toBe(0);
        return { out, results: JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) };
      }),
    );
    const results = {
      problems: runs.flatMap((r) => r.results.problems),
      scenarios: runs.flatMap((r) => r.results.scenarios),
      rows: runs.flatMap((r) => r.results.rows),
    };
    const out = runs[0]!.out;
    expect(results.problems).toEqual([]);
    expect(results.scenarios).toEqual(SCENARIOS);
    const scenarios = new Set(results.rows.map((r: { scenario: string }) => r.scenario.split(',')[0]));
    expect([...scenarios]).toEqual([
      'precision',
      'load',
      'load created through the API',
      'overload',
      'burst',
      'throughput',
      'worker overhead',
      'schedule math',
      'failover',
      'scale',
      'campaign',
      'shards',
      'flow',
    ]);
    // The cost of a run is read from Postgres' and Redis' own counters.
    const costs = results.rows.filter((r: { measure: string }) => r.measure.startsWith('cost per successful run'));
    expect(costs.map((r: { scenario: string }) => r.scenario.split(',')[0])).toEqual(['precision', 'load', 'campaign']);
    for (const row of costs)
      expect(row.punctual).toMatch(
        /\d+\.\d (statements|transactions), \d+\.\d rows written, \d+\.\d kB WAL, \d+\.\d Redis commands/,
      );
    // Every row that compares with a peer carries a figure on both sides.
    for (const row of results.rows.filter((r: { ratio: string }) => r.ratio !== '—')) {
      expect(row.punctual, row.measure).toMatch(/\d/);
      expect(row.peer, row.measure).toMatch(/\d/);
    }
    expect(readFileSync(join(out, 'latest.md'), 'utf8')).toContain(
      '| scenario | measure | Punctual | peer, same run |',
    );
  });

  it('refuses an unknown scenario or flag with a usage line', async () => {
    const unknownScenario = await bench(['--quick', '--only', 'nonsense']);
    expect(unknownScenario.code).toBe(2);
    expect(unknownScenario.output).toContain('unknown scenario(s): nonsense');
    const unknownFlag = await bench(['--fast']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.output).toContain('usage: npm run bench');
  });
});
