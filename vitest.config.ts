import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const lib = (name: string) => fileURLToPath(new URL(`./libs/${name}/src/index.ts`, import.meta.url));
/** Every lib, by its folder: `@punctual/<name>` is `libs/<name>/src/index.ts`, as tsconfig.json's paths say. */
const libs = readdirSync(new URL('./libs/', import.meta.url)).filter((name) => existsSync(lib(name)));

/** SWC keeps `emitDecoratorMetadata`, which Nest's dependency injection needs (esbuild drops it). */
export default defineConfig({
  plugins: [swc.vite({ module: { type: 'es6' } })],
  resolve: {
    alias: Object.fromEntries(libs.map((n) => [`@punctual/${n}`, lib(n)])),
  },
  test: {
    // Two workers, one per core: the integration files two at a time, and the two fault files side by side.
    maxWorkers: 2,
    // A worker keeps its loaded modules from one file to the next (Nest, Prisma and every lib are
    // imported once per worker, not once per file: about two minutes of the suite). Each file still
    // opens its own database, Redis prefix and application, and a test that stubs something
    // restores it; module-level caches are shared, so they must answer only for what keyed them.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The default report, then the ten slowest files (where the suite's minutes go).
    reporters: ['default', './test/support/slowest-files.ts'],
    // A condition polled for (a chart drawn, a row shown) gets 10 s, not vitest's 1 s: on a machine
    // busy with the fault tests' processes a console page may take longer than a second to draw.
    expect: { poll: { timeout: 10_000 } },
    projects: [
      // The unit project needs no Postgres or Redis: the specs next to the code and the checks of the code's shape.
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['libs/**/*.spec.ts', 'apps/**/*.spec.ts', 'test/architecture/**/*.test.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/fault/**', 'test/long/**', 'test/architecture/**'],
          globalSetup: ['./test/support/global-setup.ts'],
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        // The fault tests, in two files of about the same length run side by side (one per worker):
        // timed.test.ts (judged by timings: a failover within the lease) and outcomes.test.ts
        // (judged by counts only). Each imports its tests (test/fault/*.fault.ts) and runs them one
        // after another, so no two timed tests ever share the machine.
        test: {
          name: 'fault',
          include: ['test/fault/timed.test.ts', 'test/fault/outcomes.test.ts'],
          globalSetup: ['./test/support/global-setup.ts'],
          fileParallelism: true,
          maxWorkers: 2,
          testTimeout: 180_000,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        // Minutes of several processes at once (the quick benchmark): `npm run test:long`, not `npm test`.
        test: {
          name: 'long',
          include: ['test/long/**/*.test.ts'],
          globalSetup: ['./test/support/global-setup.ts'],
          maxWorkers: 1,
          testTimeout: 300_000,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
