import type { Reporter, TestModule } from 'vitest/node';

/** How many files the closing list names. */
const LISTED = 10;

/**
 * A vitest reporter beside the default one: at the end of a run, the ten files that took longest
 * (tests and hooks), with their project — where the suite's minutes go, for whoever keeps it short.
 */
export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (modules.length < 2) return;
    const rows = modules
      .map((m) => ({ file: m.relativeModuleId, project: m.project.name, ms: m.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, LISTED);
    const width = Math.max(...rows.map((r) => r.project.length));
    const lines = rows.map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.project.padEnd(width)}  ${r.file}`);
    process.stdout.write(`\n The ${rows.length} slowest files:\n${lines.join('\n')}\n`);
  }
}
