import { readFileSync } from 'node:fs';
import pg from 'pg';
import { Cluster } from '../../test/support/cluster.js';
import { sleep } from '../../test/support/processes.js';
import { openSandbox, type Sandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { InProcessScheduler } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, summarize, type Summary } from '../support/stats.js';

export interface ScaleResult {
  idleTasks: number;
  /** The namespaces the idle tasks are spread over (a customer's schedules each). */
  namespaces: number;
  dueTasks: number;
  /** Tasks created through `POST /v1/tasks:batch` (1,000 a call, each call one namespace's): tasks a second. */
  batchCreated: number;
  batchTasksPerS: number;
  /** ms per planning tick with the idle tasks present, and with none (same due tasks). */
  tickWithIdle: Summary;
  tickWithoutIdle: Summary;
  /** The leader process, after `leaderSeconds` s of leading over all those tasks: MiB. */
  leaderRssMiB: number;
  leaderPeakRssMiB: number;
  /** The API and the worker processes, idle over all those tasks (the API before the batches): MiB. */
  apiRssMiB: number;
  /** The API after the batches (a thousand tasks a request, twenty times), and its peak: MiB. */
  apiRssAfterBatchesMiB: number;
  apiPeakRssMiB: number;
  workerRssMiB: number;
  /** ms per `GET /v1/tasks?namespace=` page (one namespace's first and next pages, status and handler filters). */
  listPages: Summary;
  /** ms per `GET /v1/tasks?namespace=&q=` (substring search of name and description in one namespace). */
  search: Summary;
  /** ms per `GET /v1/namespaces` page of 50 (the first ten pages, and lookups by a name's start). */
  namespacePages: Summary;
}

const DUE_TASKS = 100;
/** Namespaces the idle tasks are spread over (--quick: fewer). */
const NAMESPACES = 10_000;
/** Tasks a batch call creates: the contract's most. */
const BATCH = 1_000;

/**
 * Scenario 7: `idleTasks` active daily tasks whose cursors lie hours ahead, beside 100 every-second
 * tasks. Measures a planning tick (in this process, every PLAN_TICK_MS) with and without the idle
 * tasks, the RSS of a real leader process over them, and `GET /v1/tasks` from a real API process.
 */
export async function benchScale(
  idleTasks: number,
  namespaces: number,
  batchCalls: number,
  tickSeconds: number,
  leaderSeconds: number,
  requests: number,
): Promise<ScaleResult> {
  const small = await openSandbox(undefined, 'bench');
  let tickWithoutIdle: Summary;
  try {
    tickWithoutIdle = await planningTicks(small, 0, 0, tickSeconds);
  } finally {
    await small.dispose();
  }
  const big = await openSandbox(undefined, 'bench');
  const tickWithIdle = await planningTicks(big, idleTasks, namespaces, tickSeconds).catch(async (error: unknown) => {
    await big.dispose();
    throw error;
  });
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    api: true,
    sandbox: big,
    env: { LOG_LEVEL: 'warn' },
  });
  try {
    const leader = await cluster.waitForLeader(15_000);
    const kib = (pid: number | undefined, field: string) =>
      Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
    await sleep(leaderSeconds * 1000);
    const apiIdle = kib(cluster.api!.child.pid, 'VmRSS') / 1024;
    const batch = await batchCreate(cluster, batchCalls);
    const { listPages, search, namespacePages } = await listLatencies(cluster, requests, Math.max(1, namespaces));
    return {
      idleTasks,
      namespaces,
      dueTasks: DUE_TASKS,
      batchCreated: batch.created,
      batchTasksPerS: batch.perS,
      tickWithIdle,
      tickWithoutIdle,
      leaderRssMiB: kib(leader.child.pid, 'VmRSS') / 1024,
      leaderPeakRssMiB: kib(leader.child.pid, 'VmHWM') / 1024,
      apiRssMiB: apiIdle,
      apiRssAfterBatchesMiB: kib(cluster.api!.child.pid, 'VmRSS') / 1024,
      apiPeakRssMiB: kib(cluster.api!.child.pid, 'VmHWM') / 1024,
      workerRssMiB: kib(cluster.workers[0]!.child.pid, 'VmRSS') / 1024,
      listPages,
      search,
      namespacePages,
    };
  } finally {
    await cluster.stop();
  }
}

/**
 * `calls` batches of 1,000 daily tasks through the API, each into a namespace of its own (created
 * first): what a product scheduling for its customers does. Returns the tasks created a second.
 */
async function batchCreate(cluster: Cluster, calls: number): Promise<{ created: number; perS: number }> {
  let created = 0;
  let took = 0;
  for (let c = 0; c < calls; c += 1) {
    const namespace = `batch-${c}`;
    const put = await cluster.call('PUT', `/v1/namespaces/${namespace}`, { quotas: { maxTasks: BATCH } });
    if (put.status !== 201) throw new Error(`PUT namespace answered ${put.status}`);
    const tasks = Array.from({ length: BATCH }, (_, i) => ({
      name: `user-${i}`,
      handler: 'noop',
      schedule: { cron: `${i % 60} ${i % 24} * * *`, timezone: 'Europe/Berlin' },
    }));
    const t0 = performance.now();
    const res = await cluster.call('POST', `/v1/tasks:batch?namespace=${namespace}`, { tasks });
    took += performance.now() - t0;
    if (res.status !== 200)
      throw new Error(`tasks:batch answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    created += res.body.created as number;
  }
  return { created, perS: took > 0 ? (created / took) * 1000 : 0 };
}

/**
 * Fills the sandbox (`idleTasks` spread over `namespaces` namespaces, or all in the default one
 * when none), then times `planDueSlots` once per PLAN_TICK_MS for `seconds` s.
 */
async function planningTicks(
  sandbox: Sandbox,
  idleTasks: number,
  namespaces: number,
  seconds: number,
): Promise<Summary> {
  const db = new pg.Client({ connectionString: sandbox.databaseUrl });
  await db.connect();
  const scheduler = await InProcessScheduler.open(sandbox.config({ LOG_LEVEL: 'warn' }));
  try {
    if (namespaces > 0)
      await db.query(`INSERT INTO namespace (name) SELECT 'ns-' || n FROM generate_series(0, $1::int - 1) AS n`, [
        namespaces,
      ]);
    for (let i = 0; i < idleTasks; i += 100_000) {
      // Task n lives in namespace ns-(n mod namespaces): its key is `ns-…/idle-n` (see qualifiedName).
      await db.query(
        `INSERT INTO task (name, handler, schedule_kind, cron, secret, next_run_at)
         SELECT CASE WHEN $3::int > 0 THEN 'ns-' || (n % $3::int) || '/' ELSE '' END || 'idle-' || n, 'noop', 'cron',
                '0 3 * * *', md5(n::text), now() + interval '6 hours' + (n % 86400) * interval '1 second'
         FROM generate_series($1::int, $2::int) AS n`,
        [i + 1, Math.min(idleTasks, i + 100_000), namespaces],
      );
    }
    // What autovacuum does soon after a bulk insert: statistics, and the pending entries of the GIN
    // indexes (labels, trigrams) merged, so searches read the indexes, not a long pending list.
    await db.query('VACUUM ANALYZE task');
    const config = sandbox.config();
    await insertTasks(db, DUE_TASKS, { prefix: 'due', nextRunAt: new Date(Math.ceil(Date.now() / 1000) * 1000) });
    const epoch = await scheduler.lead();
    const ticks: number[] = [];
    const until = Date.now() + seconds * 1000;
    while (Date.now() < until) {
      const t0 = performance.now();
      await scheduler.planner.planDueSlots(epoch);
      ticks.push(performance.now() - t0);
      await sleep(config.planTickMs);
    }
    return summarize(ticks);
  } finally {
    await scheduler.close();
    await db.end();
  }
}

/** Searches (`?q=`) timed after the pages. */
const SEARCHES = 50;

async function listLatencies(
  cluster: Cluster,
  requests: number,
  namespaces: number,
): Promise<{ listPages: Summary; search: Summary; namespacePages: Summary }> {
  const timed = async (path: string) => {
    const t0 = performance.now();
    const res = await cluster.call('GET', path);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
    return { ms: performance.now() - t0, body: res.body as { items: unknown[]; nextCursor: string | null } };
  };
  const pages: number[] = [];
  const searches: number[] = [];
  const queries = ['limit=50', 'status=active&limit=50', 'handler=noop&limit=20'];
  // A namespace a request reads: each time another, as many customers' consoles would.
  const namespaceOf = (i: number) => `ns-${(i * 7919) % namespaces}`;
  for (let i = 0; pages.length < requests; i += 1) {
    // Follow each listing ten pages deep (or to its end), as a UI scrolling through would.
    let path: string | null = `/v1/tasks?namespace=${namespaceOf(i)}&${queries[i % queries.length]!}`;
    for (let depth = 0; depth < 10 && path && pages.length < requests; depth += 1) {
      const { ms: took, body } = await timed(path);
      pages.push(took);
      path = body.nextCursor ? `${path.split('&cursor=')[0]}&cursor=${body.nextCursor}` : null;
    }
  }
  // Searches as a customer looks a task up by a piece of its name in its namespace: four in five by
  // a number that a few names hold (`idle-4711`: idle-4711 and idle-47110…47119), one in five by a
  // two-digit one that one name in a hundred holds (`idle-98`).
  for (let i = 0; i < SEARCHES; i += 1) {
    const n = i % 5 === 0 ? 10 + ((i * 7) % 90) : (i * 7919 + 4711) % 100_000;
    const namespace = `ns-${n % namespaces}`;
    searches.push((await timed(`/v1/tasks?namespace=${namespace}&q=idle-${n}&limit=50`)).ms);
  }
  // The namespaces, as the console's picker reads them: ten pages deep, then by the start of a name.
  const namespacePages: number[] = [];
  let path: string | null = '/v1/namespaces?limit=50';
  for (let depth = 0; depth < 10 && path; depth += 1) {
    const { ms: took, body } = await timed(path);
    namespacePages.push(took);
    path = body.nextCursor ? `/v1/namespaces?limit=50&cursor=${body.nextCursor}` : null;
  }
  for (let i = 0; i < 20; i += 1)
    namespacePages.push((await timed(`/v1/namespaces?limit=50&prefix=ns-${(i * 7919) % namespaces}`)).ms);
  return { listPages: summarize(pages), search: summarize(searches), namespacePages: summarize(namespacePages) };
}

/**
 * Scenario 7 as table rows: 100,000 idle tasks (--large: 1,000,000; quick: 2,000) over 10,000
 * namespaces (quick: 100), and tasks created by batch (quick: 1 call, else 20).
 */
export async function scaleScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const idle = opts.quick ? 2_000 : opts.large ? 1_000_000 : 100_000;
  const namespaces = opts.quick ? 100 : NAMESPACES;
  const r = opts.quick
    ? await benchScale(idle, namespaces, 1, 1, 1, 30)
    : await benchScale(idle, namespaces, 20, 10, 10, 300);
  const scenario = `scale, ${idle.toLocaleString('en')} idle tasks in ${namespaces.toLocaleString('en')} namespaces + ${DUE_TASKS} every-second tasks`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'planning tick p50',
      punctual: ms(r.tickWithIdle.p50),
      peer: `no idle tasks ${ms(r.tickWithoutIdle.p50)}`,
      ratio: ratio(r.tickWithIdle.p50, r.tickWithoutIdle.p50),
      target: 'independent of idle tasks',
      met: r.tickWithIdle.p50 <= 1.5 * r.tickWithoutIdle.p50 + 1,
    },
    {
      scenario,
      measure: 'planning tick p99',
      punctual: ms(r.tickWithIdle.p99),
      peer: ms(r.tickWithoutIdle.p99),
      ratio: ratio(r.tickWithIdle.p99, r.tickWithoutIdle.p99),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'leader RSS (peak)',
      punctual: `${Math.round(r.leaderRssMiB)} MiB (${Math.round(r.leaderPeakRssMiB)} MiB)`,
      peer: '—',
      ratio: '—',
      target: '≤ 512 MB',
      met: r.leaderPeakRssMiB * 1.048576 <= 512,
    },
    {
      scenario,
      measure: 'API / worker RSS, idle',
      punctual: `${Math.round(r.apiRssMiB)} MiB / ${Math.round(r.workerRssMiB)} MiB`,
      peer: `API after the batches ${Math.round(r.apiRssAfterBatchesMiB)} MiB (peak ${Math.round(r.apiPeakRssMiB)})`,
      ratio: '—',
      target: '≤ 512 MB each',
      met: Math.max(r.apiRssMiB, r.workerRssMiB) * 1.048576 <= 512,
    },
    {
      scenario,
      measure: `tasks:batch, ${r.batchCreated.toLocaleString('en')} tasks (1,000 a call)`,
      punctual: `${Math.round(r.batchTasksPerS).toLocaleString('en')} tasks/s`,
      peer: '—',
      ratio: '—',
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: `GET /v1/tasks?namespace= p50 / p99 (${r.listPages.n} pages)`,
      punctual: `${ms(r.listPages.p50)} / ${ms(r.listPages.p99)}`,
      peer: '—',
      ratio: '—',
      target: 'p99 ≤ 50 ms',
      met: r.listPages.p99 <= 50,
    },
    {
      scenario,
      measure: `GET /v1/tasks?namespace=&q= p50 / p99 (${r.search.n} searches)`,
      punctual: `${ms(r.search.p50)} / ${ms(r.search.p99)}`,
      peer: '—',
      ratio: '—',
      target: 'p99 ≤ 50 ms',
      met: r.search.p99 <= 50,
    },
    {
      scenario,
      measure: `GET /v1/namespaces p50 / p99 (${r.namespacePages.n} pages of 50, with each one's use)`,
      punctual: `${ms(r.namespacePages.p50)} / ${ms(r.namespacePages.p99)}`,
      peer: '—',
      ratio: '—',
      target: '—',
      met: null,
    },
  ];
  return { rows, data: r, problems: [] };
}
