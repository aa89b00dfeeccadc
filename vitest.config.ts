import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const lib = (name: string) => fileURLToPath(new URL(`./libs/${name}/src/index.ts`, import.meta.url));
/** Every lib, by its folder: `@punctual/<name>` is `libs/<name>/src/index.ts`, as tsconfig.json's paths say. */
const libs = readdirSync(new URL('./libs/', import.meta.url)).filter((name) => existsSync(lib(name)));

/**
 * Fault tests judged by outcomes and counts only, never by how long something took: the second lane.
 * (Two more of the kind, postgres-kill and outbox, run in the first: the lanes take about as long.)
 */
const OUTCOME_FAULTS = ['bench-quick', 'chaos', 'database-blink', 'backlog-cost', 'edits', 'redis-flush', 'slow-claim'].map((name) => `test/fault/${name}.test.ts`);

/** SWC keeps `emitDecoratorMetadata`, which Nest's dependency injection needs (esbuild drops it). */
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' } })],
  resolve: {
    alias: Object.fromEntries(
      libs.map((n) => [`@punctual/${n}`, lib(n)]),
    ),
  },
  test: {
    // Two workers, one per core: the integration files two at a time, and the two fault lanes side by side.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // A condition polled for (a chart drawn, a row shown) gets 10 s, not vitest's 1 s: on a machine
    // busy with the fault tests' processes a console page may take longer than a second to draw.
    expect: { poll: { timeout: 10_000 } },
    projects: [
      { extends: true, test: { name: 'unit', include: ['libs/**/*.spec.ts', 'apps/**/*.spec.ts'], sequence: { groupOrder: 0 } } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/fault/**'],
          globalSetup: ['./test/support/global-setup.ts'],
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        // Fault tests that time what they judge (a failover within the lease, a misfire at maxDelay,
        // an abort before the lease ends) run one file at a time: each starts several processes.
        test: {
          name: 'fault',
          include: ['test/fault/**/*.test.ts'],
          exclude: OUTCOME_FAULTS,
          globalSetup: ['./test/support/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        // Fault tests that judge only outcomes (every slot once, counts of work) run one file at a
        // time beside them: a second lane, so the suite's length is not their sum.
        test: {
          name: 'fault-outcomes',
          include: OUTCOME_FAULTS,
          globalSetup: ['./test/support/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
