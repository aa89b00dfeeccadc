import pg from 'pg';
import { Cluster } from '../../test/support/cluster.js';
import { sleep } from '../../test/support/processes.js';
import { openSandbox } from '../../test/support/sandbox.js';
import { closeLayout, measureRuns, median, openLayout } from '../../test/support/partition-layouts.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { startLags, statusCounts } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, type Summary, summarize } from '../support/stats.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Each API read is asked this many times; its p99 is reported. */
const API_CALLS = 40;

interface Phase {
  lag: Summary;
  api: Record<string, Summary>;
}

export interface HistoryResult {
  tasks: number;
  rows: number;
  seconds: number;
  inserted: { ms: number; bytes: number };
  empty: Phase;
  history: Phase;
  pruning: {
    /** How long after the roles came back with a retention of an hour every succeeded row older than an hour was gone. */
    goneAfterMs: number | null;
    lag: Summary;
    bytesBefore: number;
    bytesAfter: number;
    deadBefore: number;
    deadAfter: number;
  };
  partition: { createMs: number; createWal: number; dropMs: number; dropWal: number };
  /** The claim and the success of a run, ms (median): 40 days of history in one partition, and in 40. */
  statements: {
    single: { claim: number; success: number };
    daily: { claim: number; success: number; partitions: number };
  };
}

/**
 * DESIGN §10 "history": `tasks` every-second tasks, one scheduler and one worker, measured with no
 * history, then with `rows` rows of past history inserted directly (as the cluster writes them:
 * ids that carry their slots, one in a thousand dead, with its event) over the ten days before
 * today — start lag and the API's reads — then with every role restarted under a retention of one
 * hour: how long until every succeeded row older than an hour is gone, the dead letters kept, the
 * table's size before and after, and the start lag while it prunes. Then what a day's partition
 * costs to make and to drop, in time and WAL.
 */
export async function benchHistory(tasks: number, rows: number, seconds: number): Promise<HistoryResult> {
  const sandbox = await openSandbox(undefined, 'bench');
  const env = { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000', HISTORY_PASS_MS: '10000' };
  const cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true, sandbox, env });
  try {
    await cluster.waitForLeader();
    const first = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const ids = await insertTasks(cluster.db, tasks, { prefix: 'history', nextRunAt: new Date(first) });
    await sleep(first + 5000 - Date.now());
    const empty = await phase(cluster, seconds);

    // The history goes in with the scheduler and the worker stopped: a bulk insert of millions of
    // rows is not what a cluster writes (its foreign-key checks would hold every task's row from the
    // planner for the minutes it takes). The tasks then go on from the next seconds, as if created then.
    let inserted = { ms: 0, bytes: 0 };
    await restart(cluster, {}, async () => {
      const started = Date.now();
      await insertHistory(cluster.db, ids, rows);
      inserted = { ms: Date.now() - started, bytes: await bytes(cluster.db) };
    });
    const history = await phase(cluster, seconds);

    // A retention of an hour on every role: the history pass prunes what it lets go.
    const bytesBefore = await bytes(cluster.db);
    const deadBefore = await deadLetters(cluster.db);
    const restarted = Date.now();
    await restart(cluster, { HISTORY_RETENTION: '1h' });
    const from = Date.now();
    await sleep(seconds * 1000);
    const pruningLag = await startLags(cluster.db, from, Date.now() - 1000);
    let goneAfterMs: number | null = null;
    for (const deadline = restarted + 10 * 60_000; Date.now() < deadline; await sleep(2000)) {
      if ((await oldSucceeded(cluster.db)) === 0) {
        goneAfterMs = Date.now() - restarted;
        break;
      }
    }
    const bytesAfter = await bytes(cluster.db);
    const deadAfter = await deadLetters(cluster.db);
    return {
      tasks,
      rows,
      seconds,
      inserted,
      empty,
      history,
      pruning: { goneAfterMs, lag: pruningLag, bytesBefore, bytesAfter, deadBefore, deadAfter },
      partition: await partitionCost(cluster.db),
      statements: await statementTimes(tasks >= 1000 ? 300 : 50),
    };
  } finally {
    await cluster.stop();
  }
}

/**
 * Stops the scheduler and the worker, runs `meanwhile`, moves every task's cursor to a few seconds
 * from now (the slots of the stop are not the measure), and starts them again with `env`, waiting
 * for a leader and a few seconds of runs.
 */
async function restart(cluster: Cluster, env: Record<string, string>, meanwhile?: () => Promise<void>): Promise<void> {
  await Promise.all([...cluster.schedulers, ...cluster.workers].map((p) => p.stop()));
  cluster.schedulers.length = 0;
  cluster.workers.length = 0;
  await meanwhile?.();
  const next = Math.ceil(Date.now() / 1000) * 1000 + 5000;
  await cluster.db.query(`UPDATE task SET next_run_at = $1 WHERE name LIKE 'history-%'`, [new Date(next)]);
  await Promise.all([cluster.add('scheduler', env), cluster.add('worker', env)]);
  await cluster.waitForLeader(30_000);
  await sleep(next + 5000 - Date.now());
}

/**
 * The claim and the success of `runs` runs, prepared as a worker prepares them, timed: 40 days of
 * 200 tasks' history (320,000 rows) in one partition, and in 40 daily ones with the live horizon
 * at today (test/db/partition-cost.test.ts counts the same statements' buffers).
 */
async function statementTimes(runs: number): Promise<HistoryResult['statements']> {
  const options = { days: 40, tasks: 200, everyMinutes: 36 };
  const single = await openLayout(await openSandbox(undefined, 'bench'), { ...options, daily: false });
  try {
    const daily = await openLayout(await openSandbox(undefined, 'bench'), { ...options, daily: true });
    try {
      const one = await measureRuns(single, 'a', runs, false);
      const many = await measureRuns(daily, 'a', runs, false);
      const times = (m: typeof one) => ({
        claim: median(m.claim.map((c) => c.ms)),
        success: median(m.success.map((c) => c.ms)),
      });
      return { single: times(one), daily: { ...times(many), partitions: many.partitions } };
    } finally {
      await closeLayout(daily);
    }
  } finally {
    await closeLayout(single);
  }
}

/** Start lag over `seconds` s of the running load, then the API's reads. */
async function phase(cluster: Cluster, seconds: number): Promise<Phase> {
  const from = Date.now();
  await sleep(seconds * 1000);
  const lag = await startLags(cluster.db, from, Date.now() - 1000);
  if (lag.n === 0) throw new Error(`no run started in the window: ${JSON.stringify(await statusCounts(cluster.db))}`);
  const now = new Date();
  const hourAgo = new Date(now.getTime() - HOUR).toISOString();
  const reads: Record<string, string> = {
    "a task's executions": '/v1/tasks/history-1/executions?limit=20',
    'the dead letters': '/v1/executions?status=dead&limit=20',
    'the task list': '/v1/tasks?limit=50',
    "an hour of a task's timeline": `/v1/tasks/history-1/timeline?from=${hourAgo}&to=${now.toISOString()}&limit=1000`,
  };
  const api: Record<string, Summary> = {};
  for (const [what, path] of Object.entries(reads)) {
    const times: number[] = [];
    for (let i = 0; i < API_CALLS; i += 1) {
      const t0 = performance.now();
      const answer = await cluster.call('GET', path);
      times.push(performance.now() - t0);
      if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}`);
    }
    api[what] = summarize(times);
  }
  return { lag, api };
}

/**
 * `rows` ended executions of the tasks over the ten days before today (UTC), as the cluster writes
 * them: ids that carry their slots, one in a thousand dead (with its event), a day at a time.
 */
async function insertHistory(db: pg.Client, ids: string[], rows: number): Promise<void> {
  const today = Math.floor(Date.now() / DAY) * DAY;
  const stepMs = Math.max(1000, Math.floor((10 * DAY) / Math.ceil(rows / ids.length)));
  for (let day = 10; day >= 1; day -= 1) {
    const from = new Date(today - day * DAY);
    const to = new Date(today - (day - 1) * DAY);
    await db.query('SELECT punctual_create_history_partition($1, $2)', [from.toISOString(), to.toISOString()]);
    await db.query(
      `WITH made AS (
         INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, started_at,
                                     finished_at, queued_at, worker_id, attempt_id, error)
         SELECT punctual_execution_id(s), t.id, t.name, s, s, CASE WHEN random() < 0.001 THEN 'dead' ELSE 'succeeded' END::execution_status,
                1, 1, s + interval '4 ms', s + interval '6 ms', s + interval '1 ms', 'worker-1', gen_random_uuid(), NULL
         FROM task t, generate_series($1::timestamptz, $2::timestamptz - interval '1 millisecond', $3 * interval '1 millisecond') s
         WHERE t.id = ANY($4::uuid[])
         RETURNING id, scheduled_for, status
       )
       INSERT INTO execution_event (execution_id, scheduled_for, from_status, to_status, detail)
       SELECT id, scheduled_for, 'running', 'dead', '{"error":"HTTP 500 from the endpoint"}' FROM made WHERE status = 'dead'`,
      [from.toISOString(), to.toISOString(), stepMs, ids],
    );
  }
  await db.query('VACUUM ANALYZE task_execution');
  await db.query('VACUUM ANALYZE execution_event');
}

async function bytes(db: pg.Client): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT sum(pg_total_relation_size(relid))::float8 AS n FROM pg_partition_tree('task_execution') WHERE isleaf`,
  );
  return Number(rows[0]?.n ?? 0);
}

const deadLetters = async (db: pg.Client) =>
  Number(
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM task_execution WHERE status = 'dead'`)).rows[0]!.n,
  );

const oldSucceeded = async (db: pg.Client) =>
  Number(
    (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM task_execution WHERE status = 'succeeded' AND scheduled_for < now() - interval '1 hour'`,
      )
    ).rows[0]!.n,
  );

/** What a day's partition costs: made (both tables) and dropped, in time and WAL bytes. */
async function partitionCost(db: pg.Client): Promise<HistoryResult['partition']> {
  const lsn = async () => (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
  const wal = async (from: string) =>
    Number(
      (await db.query<{ n: number }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS n', [from])).rows[0]!
        .n,
    );
  const day = new Date(Math.floor(Date.now() / DAY) * DAY + 400 * DAY);
  let at = await lsn();
  let t0 = performance.now();
  await db.query('SELECT punctual_create_history_partition($1, $2)', [
    day.toISOString(),
    new Date(day.getTime() + DAY).toISOString(),
  ]);
  const createMs = performance.now() - t0;
  const createWal = await wal(at);
  const suffix = `p${day.toISOString().slice(0, 10).replaceAll('-', '')}t0000`;
  at = await lsn();
  t0 = performance.now();
  for (const [parent, child] of [
    ['task_execution', `task_execution_${suffix}`],
    ['execution_event', `execution_event_${suffix}`],
  ]) {
    await db.query(`ALTER TABLE ${parent} DETACH PARTITION ${child} CONCURRENTLY`);
    await db.query(`DROP TABLE ${child}`);
  }
  return { createMs, createWal, dropMs: performance.now() - t0, dropWal: await wal(at) };
}

/** Scenario "history" as table rows (quick: 100 tasks, 200,000 rows, 5 s windows). */
export async function historyScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = await benchHistory(opts.quick ? 100 : 1_000, opts.quick ? 200_000 : 10_000_000, opts.quick ? 5 : 30);
  const scenario = `history: ${r.tasks.toLocaleString('en')} tasks every second, ${r.rows.toLocaleString('en')} rows of past history`;
  const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'start lag p99 with history ÷ without',
      punctual: ms(r.history.lag.p99),
      peer: `without: ${ms(r.empty.lag.p99)}`,
      ratio: ratio(r.history.lag.p99, r.empty.lag.p99),
      target: '≤ 1.2×',
      met: r.history.lag.p99 <= 1.2 * r.empty.lag.p99,
    },
    ...Object.keys(r.history.api).map((what): Row => ({
      scenario,
      measure: `API p99: ${what} (${API_CALLS} calls)`,
      punctual: ms(r.history.api[what]!.p99),
      peer: `without: ${ms(r.empty.api[what]!.p99)}`,
      ratio: ratio(r.history.api[what]!.p99, r.empty.api[what]!.p99),
      target: '≤ 100 ms',
      met: r.history.api[what]!.p99 <= 100,
    })),
    {
      scenario,
      measure: 'retention of 1 h: every succeeded row older than an hour gone after',
      punctual: r.pruning.goneAfterMs === null ? 'not within 10 min' : `${(r.pruning.goneAfterMs / 1000).toFixed(0)} s`,
      peer: '—',
      ratio: '—',
      target: '≤ 3 min',
      met: r.pruning.goneAfterMs !== null && r.pruning.goneAfterMs <= 180_000,
    },
    {
      scenario,
      measure: 'task_execution size after ÷ before; dead letters kept',
      punctual: `${mb(r.pruning.bytesAfter)} ÷ ${mb(r.pruning.bytesBefore)}; ${r.pruning.deadAfter} of ${r.pruning.deadBefore}`,
      peer: '—',
      ratio: ratio(r.pruning.bytesAfter, r.pruning.bytesBefore),
      target: '≤ 0.30×, every one',
      met: r.pruning.bytesAfter <= 0.3 * r.pruning.bytesBefore && r.pruning.deadAfter >= r.pruning.deadBefore,
    },
    {
      scenario,
      measure: 'start lag p99 while it prunes ÷ empty',
      punctual: ms(r.pruning.lag.p99),
      peer: `empty: ${ms(r.empty.lag.p99)}`,
      ratio: ratio(r.pruning.lag.p99, r.empty.lag.p99),
      target: '≤ 1.5×',
      met: r.pruning.lag.p99 <= 1.5 * r.empty.lag.p99,
    },
    ...(['claim', 'success'] as const).map((which): Row => ({
      scenario,
      measure: `the ${which} of a run with ${r.statements.daily.partitions} daily partitions of history ÷ one (median)`,
      punctual: ms(r.statements.daily[which]),
      peer: `one partition: ${ms(r.statements.single[which])}`,
      ratio: ratio(r.statements.daily[which], r.statements.single[which]),
      target: '≤ 1.1×',
      met: r.statements.daily[which] <= 1.1 * r.statements.single[which],
    })),
    {
      scenario,
      measure: "a day's partition: made; dropped (time, WAL)",
      punctual: `${r.partition.createMs.toFixed(0)} ms, ${(r.partition.createWal / 1024).toFixed(0)} kB; ${r.partition.dropMs.toFixed(0)} ms, ${(r.partition.dropWal / 1024).toFixed(0)} kB`,
      peer: '—',
      ratio: '—',
      target: '—',
      met: null,
    },
  ];
  return { rows, data: r, problems: [] };
}
