import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Cluster } from '../test/support/cluster.js';
import { OwnPostgres } from '../test/support/postgres-server.js';
import { sleep } from '../test/support/processes.js';
import { OwnRedis } from '../test/support/redis-server.js';
import { openSandbox } from '../test/support/sandbox.js';
import { checkChaos, type ChaosVerdict, checkTimelines } from './check.js';
import { AppWorker, FaultInjector } from './faults.js';
import { Random } from './random.js';
import { chaosTasks } from './workload.js';

/**
 * `npm run chaos -- [--minutes N] [--seed S] [--schedulers N] [--shards N] [--out DIR]`: the whole
 * system — two schedulers (or `--schedulers`, leading `--shards` shards between them), two workers,
 * the API and an application's worker offering a handler of its own, on a Postgres server and a
 * Redis server of its own (both restarted among the faults) — runs 56 tasks of mixed schedules
 * and policies while faults are injected at random (see FaultInjector). Then it
 * lets the system settle and checks every slot against DESIGN §1 (see checkChaos), prints the
 * table and writes it as JSON. Exits 1 when a promise broke: a slot lost or left unfinished, a
 * success recorded twice, a handler run twice without a crash to explain it, a wrong skip, an early start.
 */
const USAGE = 'usage: npm run chaos -- [--minutes N] [--seed S] [--schedulers N] [--shards N] [--out DIR]';
let values: { minutes: string; seed?: string; schedulers: string; shards: string; out?: string };
try {
  const options = {
    minutes: { type: 'string', default: '1' },
    seed: { type: 'string' },
    schedulers: { type: 'string', default: '2' },
    shards: { type: 'string', default: '1' },
    out: { type: 'string' },
  } as const;
  ({ values } = parseArgs({ options }));
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
const minutes = Number(values.minutes);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const schedulers = Number(values.schedulers);
const shards = Number(values.shards);
const whole = (n: number, max: number) => Number.isInteger(n) && n >= 1 && n <= max;
if (!(minutes > 0 && minutes <= 600) || !Number.isInteger(seed) || !whole(schedulers, 8) || !whole(shards, 256)) {
  console.error(
    `--minutes takes a number of minutes in (0, 600], --seed a whole number, --schedulers 1 to 8, --shards 1 to 256\n${USAGE}`,
  );
  process.exit(2);
}

const random = new Random(seed);
const runMs = minutes * 60_000;
const redis = await OwnRedis.start();
const postgres = await OwnPostgres.start();
let verdict: ChaosVerdict;
let timeline: { slots: number; problems: string[] } = { slots: 0, problems: [] };
let faults: FaultInjector | null = null;
let app: AppWorker | null = null;
try {
  const sandbox = await openSandbox(undefined, 'chaos', postgres.base);
  const cluster = await Cluster.start({
    schedulers,
    workers: 2,
    api: true,
    sandbox,
    // A killed worker's run is taken back after 5 s, not the default 30 s. CATCHUP_MAX is above any
    // backlog a run can make: every slot a misfire policy drops gets a `missed` row, so the check
    // counts a slot without a row as lost, with no counter to excuse it.
    env: {
      REDIS_URL: redis.url,
      LEASE_MS: '5000',
      LOG_LEVEL: 'info',
      CATCHUP_MAX: '100000',
      SCHEDULER_SHARDS: String(shards),
    },
  });
  app = new AppWorker(sandbox.env({ REDIS_URL: redis.url, LEASE_MS: '5000', HTTP_ALLOW_HOSTS: '127.0.0.1' }));
  app.start();
  try {
    const url = (query: { delay?: number; failFirst?: number }) => cluster.invocations.url(query);
    const started = Date.now();
    const tasks = chaosTasks(random, url, runMs);
    for (const task of tasks) {
      // A one-off drawn for the first seconds of the run may have come due while the tasks before it
      // were created (a busy machine): it runs a little later instead of being refused as past.
      const at = (task.schedule as { at?: string }).at;
      if (at !== undefined && Date.parse(at) < Date.now() + 2_000)
        task.schedule = { ...task.schedule, at: new Date(Date.now() + 2_000).toISOString() };
      const res = await cluster.call('POST', '/v1/tasks', task);
      if (res.status !== 201)
        throw new Error(`could not create ${task.name}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    console.log(
      `chaos: seed ${seed}, ${minutes} min, ${tasks.length} tasks, ${schedulers} schedulers, ${shards} shard(s), 2 workers`,
    );
    faults = new FaultInjector(cluster, redis, random, tasks, url, postgres, app);
    await faults.run(Date.now() + runMs);
    const end = Date.now();
    // Let the last faults heal: a leader, workers, leases taken back, the queue rebuilt.
    await cluster.waitForLeader(30_000);
    await sleep(8_000);
    await cluster.settle(end, 60_000);
    verdict = await checkChaos(cluster.db, cluster.invocations.calls, faults.log, end - 2_000);
    timeline = await checkTimelines(cluster.db, (path) => cluster.call('GET', path), started, end - 2_000);
  } finally {
    await app.stop('SIGKILL');
    await cluster.stop();
  }
} finally {
  await redis.stop();
  postgres.dispose();
}

const faultCounts: Record<string, number> = {};
for (const f of faults?.log ?? []) faultCounts[f.kind] = (faultCounts[f.kind] ?? 0) + 1;
const problems = [
  ...verdict.lost.map((l) => `lost: ${l}`),
  ...verdict.unfinished.map((u) => `unfinished: ${u}`),
  ...verdict.doubleSuccess.map((d) => `succeeded twice: ${d}`),
  ...verdict.duplicates.map((d) => `ran twice: ${d}`),
  ...verdict.wrongSkips.map((w) => `wrongly skipped(overlap): ${w}`),
  ...verdict.early.map((e) => `early: ${e}`),
  ...verdict.deadUnrun.map((d) => `dead without a handler run: ${d}`),
  ...timeline.problems.map((p) => `timeline: ${p}`),
];
console.log(table(verdict, faultCounts));
console.log(
  `timeline: ${timeline.slots} slots read through the API, ${timeline.problems.length} problem(s) (a slot with no or two outcomes, one unexplained, or a reason that contradicts its row)`,
);
const dir = values.out ?? fileURLToPath(new URL('../../bench/results', import.meta.url));
mkdirSync(dir, { recursive: true });
writeFileSync(
  `${dir}/chaos.json`,
  JSON.stringify(
    {
      at: new Date().toISOString(),
      seed,
      minutes,
      schedulers,
      shards,
      faults: faultCounts,
      verdict,
      timeline,
      problems,
    },
    null,
    2,
  ),
);
if (problems.length) {
  console.error(
    `\n${problems.length} problem(s):\n${problems
      .slice(0, 50)
      .map((p) => `- ${p}`)
      .join('\n')}`,
  );
  process.exitCode = 1;
}
process.exit();

function table(v: ChaosVerdict, counts: Record<string, number>): string {
  const lines = [
    ['slots due', String(v.expected)],
    ['slots next to an edit (either definition)', String(v.ambiguous)],
    ['execution rows', String(v.rows)],
    ['handler runs (webhook 2xx)', String(v.runs)],
    ['lost', String(v.lost.length)],
    ['unfinished', String(v.unfinished.length)],
    ['succeeded twice', String(v.doubleSuccess.length)],
    ['ran twice (every call counted; no crash to explain it)', String(v.duplicates.length)],
    ['ran again after a worker crash (at-least-once)', String(v.rerunsAfterCrash)],
    ['wrongly skipped(overlap) (a retry, a turn waited, nothing in progress)', String(v.wrongSkips.length)],
    ['started or called before fire_at', String(v.early.length)],
    ['dead without a handler run', String(v.deadUnrun.length)],
    ['start delay of scheduled slots, p50 / p99', `${v.startDelayMs.p50} / ${v.startDelayMs.p99} ms`],
    ...v.lateStartsByTask.map((line) => ['  started over 1 s late', line]),
    ...Object.entries(v.byStatus)
      .sort()
      .map(([status, n]) => [`  ${status}`, String(n)]),
    ...Object.entries(counts)
      .sort()
      .map(([kind, n]) => [
        `fault: ${kind} ×${n}, worst start delay after it`,
        v.worstStartDelayMs[kind] === undefined ? '—' : `${v.worstStartDelayMs[kind]} ms`,
      ]),
  ];
  const width = Math.max(...lines.map(([k]) => k!.length));
  return lines.map(([k, n]) => `${k!.padEnd(width)}  ${n}`).join('\n');
}
