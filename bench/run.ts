import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { burstScenario } from './scenarios/burst.js';
import { campaignScenario } from './scenarios/campaign.js';
import { fairCatchUpScenario } from './scenarios/fair-catch-up.js';
import { failoverScenario } from './scenarios/failover.js';
import { flowScenario } from './scenarios/flow.js';
import { historyScenario } from './scenarios/history.js';
import { loadApiScenario } from './scenarios/load-api.js';
import { overloadScenario } from './scenarios/overload.js';
import { pgbouncerScenario } from './scenarios/pgbouncer.js';
import { loadScenario, precisionScenario } from './scenarios/precision.js';
import { scaleScenario } from './scenarios/scale.js';
import { scheduleMathScenario } from './scenarios/schedule-math.js';
import { shardsScenario } from './scenarios/shards.js';
import { throughputScenario } from './scenarios/throughput.js';
import { timelineScenario } from './scenarios/timeline.js';
import { workerOverheadScenario } from './scenarios/worker-overhead.js';
import type { BenchOptions } from './support/options.js';
import { markdownTable, type Row, type ScenarioOutcome, textTable } from './support/report.js';

/**
 * `npm run bench -- [--quick] [--large] [--only precision,burst] [--out DIR] [--profile DIR]`: runs
 * the scenarios of DESIGN §10 against real Postgres and Redis, each beside its peer measured in the
 * same run, prints the table and writes latest.json and latest.md (the README's table) to DIR
 * (bench/results). `--profile` writes a CPU profile of every app process it starts.
 * Exits 1 when a scenario broke a promise (a lost or doubled slot); timings never fail the run.
 */
const SCENARIOS: Record<string, (opts: BenchOptions) => Promise<ScenarioOutcome>> = {
  precision: precisionScenario,
  load: loadScenario,
  'load-api': loadApiScenario,
  overload: overloadScenario,
  burst: burstScenario,
  throughput: throughputScenario,
  'worker-overhead': workerOverheadScenario,
  'schedule-math': scheduleMathScenario,
  failover: failoverScenario,
  scale: scaleScenario,
  campaign: campaignScenario,
  shards: shardsScenario,
  flow: flowScenario,
  timeline: timelineScenario,
  pgbouncer: pgbouncerScenario,
  'fair-catch-up': fairCatchUpScenario,
  history: historyScenario,
};

let values: { quick: boolean; large: boolean; only?: string; out?: string; profile?: string };
try {
  ({ values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      large: { type: 'boolean', default: false },
      only: { type: 'string' },
      out: { type: 'string' },
      profile: { type: 'string' },
    },
  }));
} catch (error) {
  console.error(
    `${(error as Error).message}\nusage: npm run bench -- [--quick] [--large] [--only a,b] [--out DIR] [--profile DIR]`,
  );
  process.exit(2);
}
const opts: BenchOptions = { quick: values.quick, large: values.large };
if (values.profile) process.env.PUNCTUAL_CPU_PROFILE_DIR = values.profile;
const only = values.only ? values.only.split(',') : Object.keys(SCENARIOS);
const unknown = only.filter((name) => !(name in SCENARIOS));
if (unknown.length) {
  console.error(`unknown scenario(s): ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  process.exit(2);
}

const started = Date.now();
const rows: Row[] = [];
const problems: string[] = [];
const data: Record<string, unknown> = {};
for (const name of only) {
  const t0 = Date.now();
  process.stdout.write(`▶ ${name}… `);
  try {
    const outcome = await SCENARIOS[name]!(opts);
    rows.push(...outcome.rows);
    problems.push(...outcome.problems);
    data[name] = outcome.data;
  } catch (error) {
    problems.push(`${name} failed: ${(error as Error).stack ?? String(error)}`);
  }
  console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
console.log(
  `\n${textTable(rows)}\n\n${machine}; ${((Date.now() - started) / 1000).toFixed(0)} s${opts.quick ? ' (quick: correctness only)' : ''}`,
);
const dir = values.out ?? fileURLToPath(new URL('../../bench/results', import.meta.url));
mkdirSync(dir, { recursive: true });
const at = new Date().toISOString();
writeFileSync(
  `${dir}/latest.json`,
  JSON.stringify({ at, machine, options: opts, scenarios: only, rows, problems, data }, null, 2),
);
writeFileSync(
  `${dir}/latest.md`,
  `${markdownTable(rows)}\n\n${machine}, ${at.slice(0, 10)}${opts.quick ? ' (--quick)' : ''}\n`,
);
if (problems.length) {
  console.error(`\n${problems.length} problem(s):\n${problems.map((p) => `- ${p}`).join('\n')}`);
  process.exitCode = 1;
}
// Clients of finished scenarios may keep sockets half-open for a while: the run is over.
process.exit();
