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
  dueTasks: number;
  /** ms per planning tick with the idle tasks present, and with none (same due tasks). */
  tickWithIdle: Summary;
  tickWithoutIdle: Summary;
  /** The leader process, after `leaderSeconds` s of leading over all those tasks: MiB. */
  leaderRssMiB: number;
  leaderPeakRssMiB: number;
  /** ms per `GET /v1/tasks` page (first pages, deep keyset pages, status and handler filters). */
  listPages: Summary;
  /** ms per `GET /v1/tasks?q=` (substring search of name and description). */
  search: Summary;
}

const DUE_TASKS = 100;

/**
 * Scenario 7: `idleTasks` active daily tasks whose cursors lie hours ahead, beside 100 every-second
 * tasks. Measures a planning tick (in this process, every PLAN_TICK_MS) with and without the idle
 * tasks, the RSS of a real leader process over them, and `GET /v1/tasks` from a real API process.
 */
export async function benchScale(
  idleTasks: number,
  tickSeconds: number,
  leaderSeconds: number,
  requests: number,
): Promise<ScaleResult> {
  const small = await openSandbox(undefined, 'bench');
  let tickWithoutIdle: Summary;
  try {
    tickWithoutIdle = await planningTicks(small, 0, tickSeconds);
  } finally {
    await small.dispose();
  }
  const big = await openSandbox(undefined, 'bench');
  const tickWithIdle = await planningTicks(big, idleTasks, tickSeconds).catch(async (error: unknown) => {
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
    await sleep(leaderSeconds * 1000);
    const status = readFileSync(`/proc/${leader.child.pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    const { listPages, search } = await listLatencies(cluster, requests);
    return {
      idleTasks,
      dueTasks: DUE_TASKS,
      tickWithIdle,
      tickWithoutIdle,
      leaderRssMiB: kib('VmRSS') / 1024,
      leaderPeakRssMiB: kib('VmHWM') / 1024,
      listPages,
      search,
    };
  } finally {
    await cluster.stop();
  }
}

/** Fills the sandbox, then times `planDueSlots` once per PLAN_TICK_MS for `seconds` s. */
async function planningTicks(sandbox: Sandbox, idleTasks: number, seconds: number): Promise<Summary> {
  const db = new pg.Client({ connectionString: sandbox.databaseUrl });
  await db.connect();
  const scheduler = await InProcessScheduler.open(sandbox.config({ LOG_LEVEL: 'warn' }));
  try {
    for (let i = 0; i < idleTasks; i += 100_000) {
      await db.query(
        `INSERT INTO task (name, handler, schedule_kind, cron, secret, next_run_at)
         SELECT 'idle-' || n, 'noop', 'cron', '0 3 * * *', md5(n::text), now() + interval '6 hours' + (n % 86400) * interval '1 second'
         FROM generate_series($1::int, $2::int) AS n`,
        [i + 1, Math.min(idleTasks, i + 100_000)],
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

async function listLatencies(cluster: Cluster, requests: number): Promise<{ listPages: Summary; search: Summary }> {
  const timed = async (path: string) => {
    const t0 = performance.now();
    const res = await cluster.call('GET', path);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
    return { ms: performance.now() - t0, body: res.body as { items: unknown[]; nextCursor: string | null } };
  };
  const pages: number[] = [];
  const searches: number[] = [];
  const queries = ['/v1/tasks?limit=50', '/v1/tasks?status=active&limit=50', '/v1/tasks?handler=noop&limit=100'];
  for (let i = 0; pages.length < requests; i += 1) {
    // Follow each listing ten pages deep, as a UI scrolling through would.
    let path: string | null = queries[i % queries.length]!;
    for (let depth = 0; depth < 10 && path && pages.length < requests; depth += 1) {
      const { ms: took, body } = await timed(path);
      pages.push(took);
      path = body.nextCursor ? `${path.split('&cursor=')[0]}&cursor=${body.nextCursor}` : null;
    }
  }
  // Searches as a user looks a task up by a piece of its name: four in five by a number that a few
  // names hold (`idle-4711`: idle-4711 and idle-47110…47119), one in five by a two-digit one that
  // one name in a hundred holds (`idle-98`, whose matches sort last).
  for (let i = 0; i < SEARCHES; i += 1) {
    const n = i % 5 === 0 ? 10 + ((i * 7) % 90) : (i * 7919 + 4711) % 100_000;
    searches.push((await timed(`/v1/tasks?q=idle-${n}&limit=50`)).ms);
  }
  return { listPages: summarize(pages), search: summarize(searches) };
}

/** Scenario 7 as table rows: 100,000 idle tasks (--large: 1,000,000; quick: 2,000). */
export async function scaleScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const idle = opts.quick ? 2_000 : opts.large ? 1_000_000 : 100_000;
  const r = opts.quick ? await benchScale(idle, 1, 1, 30) : await benchScale(idle, 10, 10, 300);
  const scenario = `scale, ${idle.toLocaleString('en')} idle tasks + ${DUE_TASKS} every-second tasks`;
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
      measure: `GET /v1/tasks p50 / p99 (${r.listPages.n} pages)`,
      punctual: `${ms(r.listPages.p50)} / ${ms(r.listPages.p99)}`,
      peer: '—',
      ratio: '—',
      target: 'p99 ≤ 50 ms',
      met: r.listPages.p99 <= 50,
    },
    {
      scenario,
      measure: `GET /v1/tasks?q= p50 / p99 (${r.search.n} searches)`,
      punctual: `${ms(r.search.p50)} / ${ms(r.search.p99)}`,
      peer: '—',
      ratio: '—',
      target: 'p99 ≤ 50 ms',
      met: r.search.p99 <= 50,
    },
  ];
  return { rows, data: r, problems: [] };
}
