import { BATCH_MAX } from '@punctual/contract';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { EXECUTION_HISTORY } from '../../libs/db/src/index.js';
import { EXECUTION_JOB_OPTIONS } from '../../libs/queue/src/index.js';
import { Cluster, TERMINAL } from '../../test/support/cluster.js';
import { ADMIN_URL, REDIS_URL } from '../../test/support/env.js';
import { sleep } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { type Cost, CostMeter, perRun } from '../support/cost.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { statusCounts } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, summarize, type Summary } from '../support/stats.js';
import { CONCURRENCY } from './precision.js';

/** A side's start lags (ms after the instant) summed up the same way for both sides. */
function startsOf(lags: number[]): Pick<CampaignSide, 'lag' | 'firstStart' | 'lastStart'> {
  const lag = summarize(lags);
  return { lag, firstStart: lags.reduce((min, v) => Math.min(min, v), Infinity), lastStart: lag.max };
}

/** How one side ran the campaign, in ms after its common instant unless said otherwise. */
export interface CampaignSide {
  /** Seconds to create the tasks (Punctual) or add the delayed jobs (BullMQ). */
  createSeconds: number;
  /** ms from the end of creation to the instant: negative when creation ran past it. */
  createMargin: number;
  /** `started − instant` of every run (Punctual: first attempts). */
  lag: Summary;
  firstStart: number;
  lastStart: number;
  lastFinish: number;
  runs: number;
}

export interface CampaignAccounting {
  /** Tasks stored under the campaign's names. */
  stored: number;
  /** Tasks of the campaign whose one execution succeeded, and no other execution exists. */
  succeededOnce: number;
  /** Tasks of the campaign with no execution at all. */
  withoutRun: number;
  /** Tasks of the campaign with more than one execution. */
  severalRuns: number;
  /** Executions whose history shows more than one success. */
  doubled: number;
  maxAttempt: number;
  byStatus: Record<string, number>;
  /** Whether every execution reached a terminal status before the wait gave up. */
  settled: boolean;
  /** Pending (not terminal) executions when the wait ended. */
  pending: number;
  /** The leader's epoch at the end: 1 when the one scheduler kept its lease throughout. */
  leaderEpoch: number;
}

export interface CampaignResult {
  tasks: number;
  calls: number;
  punctual: CampaignSide & { accounting: CampaignAccounting; cost: Cost };
  bullmq: CampaignSide & { cost: Pick<Cost, 'runs' | 'redisCommands'> };
}

/**
 * Time to create everything before the instant: creating 100,000 tasks takes 25–55 s on two cores
 * (the 20 s base is for a campaign that large; the quick one of 2,000 is created in about 2 s
 * alone, and took 5 s beside the other half of the quick run on a busy machine).
 */
const punctualLeadMs = (tasks: number) => (tasks >= 10_000 ? 20_000 : 6_000) + tasks * 0.7;
/** Time to add the delayed jobs before BullMQ's instant (about 15,000 jobs/s). */
const bullmqLeadMs = (tasks: number) => 5_000 + tasks * 0.15;
/** Longest wait for the runs after the instant. */
const SETTLE_MS = 600_000;
/** The wait gives up earlier when no run finished for this long after the instant. */
const STALL_MS = 60_000;
const ADD_CHUNK = 5_000;
const PREFIX = 'campaign';

/**
 * DESIGN §10's campaign: `tasks` one-off runs due at one instant, created through
 * `POST /v1/tasks:batch` in calls of {@link BATCH_MAX} against a real API process, run by one
 * scheduler and one worker process, every run recorded in Postgres. The peer: as many BullMQ
 * delayed jobs, all due at one instant of their own, run by a bare worker process with the same
 * concurrency. Also reads what Postgres and Redis did for the whole campaign, per successful run.
 */
export async function benchCampaign(tasks: number): Promise<CampaignResult> {
  const punctual = await punctualCampaign(tasks);
  const bullmq = await bullmqCampaign(tasks);
  return { tasks, calls: Math.ceil(tasks / BATCH_MAX), punctual, bullmq };
}

async function punctualCampaign(tasks: number): Promise<CampaignResult['punctual']> {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    api: true,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000' },
  });
  let meter: CostMeter | null = null;
  try {
    await cluster.waitForLeader();
    meter = await CostMeter.open(sandbox.databaseUrl, REDIS_URL);
    const instant = Math.ceil((Date.now() + punctualLeadMs(tasks)) / 1000) * 1000;
    const runAt = new Date(instant).toISOString();
    await meter.resetStatements();
    const before = await meter.read();
    const started = performance.now();
    for (let offset = 0; offset < tasks; offset += BATCH_MAX) {
      const batch = Array.from({ length: Math.min(BATCH_MAX, tasks - offset) }, (_, i) => ({
        name: `${PREFIX}-${offset + i}`,
        handler: 'noop',
        schedule: { at: runAt },
        labels: { campaign: 'bench' },
      }));
      const res = await cluster.call('POST', '/v1/tasks:batch', { tasks: batch });
      if (res.status !== 200)
        throw new Error(`batch at ${offset} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    const createSeconds = (performance.now() - started) / 1000;
    const createMargin = instant - Date.now();
    await sleep(instant - Date.now());
    const { settled, pending } = await settleRuns(cluster.db, tasks, instant);
    // Exited backends have published their counters: the reading covers all the work.
    await Promise.all(
      [...cluster.schedulers, ...cluster.workers, ...(cluster.api ? [cluster.api] : [])].map((app) =>
        app.stop('SIGTERM'),
      ),
    );
    await waitForBackendsGone(cluster.db);
    const after = await meter.read();

    const { rows: lagRows } = await cluster.db.query<{ lag: number }>(
      `SELECT extract(epoch FROM started_at - $1::timestamptz) * 1000 AS lag FROM task_execution WHERE started_at IS NOT NULL AND attempt = 1`,
      [new Date(instant)],
    );
    const starts = startsOf(lagRows.map((r) => Number(r.lag)));
    const { rows: spanRows } = await cluster.db.query<{
      last_finish: number | null;
      max_attempt: number | null;
      leader_epoch: string;
    }>(
      `SELECT extract(epoch FROM max(finished_at) - $1::timestamptz) * 1000 AS last_finish, max(attempt) AS max_attempt,
              (SELECT epoch FROM scheduler_state WHERE id = 1) AS leader_epoch
       FROM task_execution`,
      [new Date(instant)],
    );
    const accounting = await account(cluster.db, tasks);
    const byStatus = await statusCounts(cluster.db);
    const cost = await meter.cost(before, after, byStatus.succeeded ?? 0);
    return {
      createSeconds,
      createMargin,
      ...starts,
      lastFinish: Number(spanRows[0]?.last_finish ?? NaN),
      runs: byStatus.succeeded ?? 0,
      accounting: {
        ...accounting,
        maxAttempt: Number(spanRows[0]?.max_attempt ?? 0),
        byStatus,
        settled,
        pending,
        leaderEpoch: Number(spanRows[0]?.leader_epoch ?? 0),
      },
      cost,
    };
  } finally {
    await meter?.close();
    await cluster.stop();
  }
}

/**
 * Polls until `tasks` executions are terminal and none is pending; gives up after {@link SETTLE_MS}
 * past the instant, or when no execution finished for {@link STALL_MS} after it.
 */
async function settleRuns(
  db: pg.Client,
  tasks: number,
  instant: number,
): Promise<{ settled: boolean; pending: number }> {
  const deadline = instant + SETTLE_MS;
  let lastDone = -1;
  let lastChange = Date.now();
  for (;;) {
    const { rows } = await db.query<{ done: number; pending: number }>(
      `SELECT count(*) FILTER (WHERE status = ANY($1::execution_status[]))::int AS done,
              count(*) FILTER (WHERE status <> ALL($1::execution_status[]))::int AS pending
       FROM task_execution`,
      [TERMINAL],
    );
    const { done, pending } = rows[0]!;
    if (done >= tasks && pending === 0) return { settled: true, pending };
    const now = Date.now();
    if (done !== lastDone) {
      lastDone = done;
      lastChange = now;
    }
    if (now > deadline || now - Math.max(lastChange, instant) > STALL_MS) return { settled: false, pending };
    await sleep(250);
  }
}

/** Waits until no Punctual process has a session open in the sandbox's database. */
async function waitForBackendsGone(db: pg.Client): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'punctual %'`,
    );
    if (rows[0]!.n === 0) return;
    await sleep(100);
  }
}

/** Each campaign task's executions: exactly one, succeeded, with one `succeeded` event. */
async function account(
  db: pg.Client,
  tasks: number,
): Promise<Omit<CampaignAccounting, 'maxAttempt' | 'byStatus' | 'settled' | 'pending' | 'leaderEpoch'>> {
  const { rows } = await db.query<{ without_run: number; several_runs: number; succeeded_once: number }>(
    `SELECT count(*) FILTER (WHERE runs = 0)::int AS without_run,
            count(*) FILTER (WHERE runs > 1)::int AS several_runs,
            count(*) FILTER (WHERE runs = 1 AND succeeded = 1)::int AS succeeded_once
     FROM (SELECT n.name, count(e.id) AS runs, count(e.id) FILTER (WHERE e.status = 'succeeded') AS succeeded
           FROM (SELECT $1 || '-' || g AS name FROM generate_series(0, $2::int - 1) AS g) AS n
           LEFT JOIN task_execution e ON e.task_name = n.name
           GROUP BY n.name) AS per_task`,
    [PREFIX, tasks],
  );
  const { rows: doubled } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM task_execution e WHERE (SELECT count(*) FROM (${EXECUTION_HISTORY}) h WHERE h.to_status = 'succeeded') > 1`,
  );
  const { rows: stored } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM task WHERE name LIKE $1`, [
    `${PREFIX}-%`,
  ]);
  const r = rows[0]!;
  return {
    stored: stored[0]!.n,
    succeededOnce: r.succeeded_once,
    withoutRun: r.without_run,
    severalRuns: r.several_runs,
    doubled: doubled[0]!.n,
  };
}

async function bullmqCampaign(tasks: number): Promise<CampaignResult['bullmq']> {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: PREFIX, concurrency: CONCURRENCY });
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(PREFIX, { connection, prefix });
  const meter = await CostMeter.open(ADMIN_URL, REDIS_URL);
  try {
    const instant = Math.ceil((Date.now() + bullmqLeadMs(tasks)) / 1000) * 1000;
    const before = await meter.read();
    const started = performance.now();
    for (let i = 0; i < tasks; i += ADD_CHUNK) {
      // Every job's delayed timestamp (`timestamp + delay`) is the instant itself.
      const timestamp = Date.now();
      const opts = { ...EXECUTION_JOB_OPTIONS, timestamp, delay: Math.max(0, instant - timestamp) };
      await queue.addBulk(
        Array.from({ length: Math.min(ADD_CHUNK, tasks - i) }, () => ({ name: PREFIX, data: {}, opts })),
      );
    }
    const createSeconds = (performance.now() - started) / 1000;
    const createMargin = instant - Date.now();
    await sleep(instant - Date.now());
    // Job counts, not the worker's records, are polled: reporting the records costs the peer CPU.
    const deadline = instant + SETTLE_MS;
    for (;;) {
      const counts = await queue.getJobCounts('wait', 'delayed', 'prioritized', 'active', 'waiting-children');
      if (Object.values(counts).every((n) => n === 0) || Date.now() > deadline) break;
      await sleep(250);
    }
    let records = await peer.records();
    for (let i = 0; i < 20 && records.length < tasks; i += 1) {
      await sleep(500);
      records = await peer.records();
    }
    const after = await meter.read();
    const starts = startsOf(records.map((r) => r.started - instant));
    return {
      createSeconds,
      createMargin,
      ...starts,
      lastFinish: records.reduce((max, r) => Math.max(max, r.finished - instant), -Infinity),
      runs: records.length,
      cost: { runs: records.length, redisCommands: after.redisCommands - before.redisCommands },
    };
  } finally {
    await meter.close();
    await peer.stop();
    await queue.close();
    connection.disconnect();
    await deleteKeys(prefix);
  }
}

/** The campaign as table rows: 100,000 tasks (quick: 2,000). */
export async function campaignScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = await benchCampaign(opts.quick ? 2_000 : 100_000);
  const { punctual: p, bullmq: b } = r;
  const a = p.accounting;
  const full = r.tasks === 100_000;
  const scenario = `campaign, ${r.tasks.toLocaleString('en')} one-off runs due at one instant, created via POST /v1/tasks:batch (${r.calls} calls)`;
  const seconds = (s: number) => `${s.toFixed(1)} s`;
  const allRecorded = a.succeededOnce === r.tasks && a.doubled === 0 && (a.byStatus.succeeded ?? 0) === r.tasks;
  const rows: Row[] = [
    {
      scenario,
      measure: 'created in',
      punctual: seconds(p.createSeconds),
      peer: `BullMQ addBulk of delayed jobs ${seconds(b.createSeconds)}`,
      ratio: '—',
      target: full ? '≤ 60 s' : '—',
      met: full ? p.createSeconds <= 60 : null,
    },
    {
      scenario,
      measure: 'last start after the instant',
      punctual: ms(p.lastStart),
      peer: `BullMQ delayed jobs ${ms(b.lastStart)}`,
      ratio: ratio(p.lastStart, b.lastStart),
      target: '≤ 1.5× peer',
      met: p.lastStart <= 1.5 * b.lastStart,
    },
    {
      scenario,
      measure: 'start lag p50 / p99',
      punctual: `${ms(p.lag.p50)} / ${ms(p.lag.p99)}`,
      peer: `${ms(b.lag.p50)} / ${ms(b.lag.p99)}`,
      ratio: '—',
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'last completion after the instant',
      punctual: ms(p.lastFinish),
      peer: ms(b.lastFinish),
      ratio: ratio(p.lastFinish, b.lastFinish),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'runs recorded (each task once)',
      punctual: `${a.succeededOnce} succeeded of ${r.tasks}`,
      peer: `${b.runs} (no history)`,
      ratio: '—',
      target: 'all',
      met: allRecorded,
    },
    {
      scenario,
      measure: 'cost per successful run (create, plan, fire, claim, record)',
      punctual: perRun(p.cost),
      peer: b.cost.runs ? `${(b.cost.redisCommands / b.cost.runs).toFixed(1)} Redis commands` : '—',
      ratio: '—',
      target: '—',
      met: null,
    },
  ];
  const problems = [
    ...(p.createMargin < 0
      ? [`campaign: creating the tasks ended ${ms(-p.createMargin)} after the instant they are due at`]
      : []),
    ...(b.createMargin < 0
      ? [`campaign: adding the BullMQ jobs ended ${ms(-b.createMargin)} after the instant they are due at`]
      : []),
    ...(a.stored === r.tasks ? [] : [`campaign: ${a.stored} of ${r.tasks} tasks stored`]),
    ...(a.settled
      ? []
      : [`campaign: runs still unfinished when the wait ended (${a.pending} pending, ${JSON.stringify(a.byStatus)})`]),
    ...(a.withoutRun ? [`campaign: ${a.withoutRun} tasks have no execution`] : []),
    ...(a.severalRuns ? [`campaign: ${a.severalRuns} tasks have more than one execution`] : []),
    ...(a.doubled ? [`campaign: ${a.doubled} executions succeeded more than once`] : []),
    ...((a.byStatus.succeeded ?? 0) === r.tasks && a.succeededOnce === r.tasks
      ? []
      : [`campaign: expected ${r.tasks} tasks succeeded once, got ${a.succeededOnce} (${JSON.stringify(a.byStatus)})`]),
    ...(b.runs === r.tasks ? [] : [`campaign: BullMQ ran ${b.runs} of ${r.tasks} delayed jobs`]),
  ];
  return { rows, data: r, problems };
}
