import { Cluster } from '../../test/support/cluster.js';
import { sleep } from '../../test/support/processes.js';
import { openSandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { ms, summarize, type Summary } from '../support/stats.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';

export interface FairCatchUpSide {
  /** CATCHUP_RATE of the run (1,000,000: no pacing at all, every catch-up pushed when due). */
  catchupRate: number;
  catchUps: number;
  /** ms from the resume until every catch-up run had succeeded. */
  catchUpMs: number;
  /** ms the resumes took (eight at a time), and from the first resume until every catch-up run had succeeded. */
  resumesMs: number;
  /**
   * Start lag (started − fire_at) of namespace B's runs, ms: before the resume; while the resumes
   * write the catch-up runs (the API and Postgres busy with 20,000 inserts); and after them, while
   * the catch-up runs are released and run.
   */
  before: Summary;
  resuming: Summary;
  during: Summary;
  /**
   * The same during the catch-up, of team-b's instants that are not a whole minute. At a whole
   * minute team-b's 50 runs start beside team-a's 200 on-time slots — each, while its task's own
   * catch-ups are held, parked by the leader as it fires (see `duringMinute`, `afterMinute`).
   */
  duringOffMinute: Summary;
  /**
   * Team-b's start lag at team-a's whole minutes: during the catch-up, and after it (the first
   * minute once every catch-up has run, team-a's 200 tasks on time and nothing held) — what those
   * instants cost with no backlog at all. Empty when the size waits for no minute after.
   */
  duringMinute: Summary;
  afterMinute: Summary;
}

interface Size {
  pausedTasks: number;
  liveTasks: number;
  catchupMax: number;
  /** How long team-b runs alone before the resume: its p99 "before" (a minute: 3,000 starts, not a handful of worst ones). */
  beforeMs: number;
  /** Whether to wait, after the catch-up, for a whole minute with team-a on time and nothing held. */
  minuteAfter: boolean;
}
const WARM_UP_MS = 5_000;
const FULL: Size = { pausedTasks: 200, liveTasks: 50, catchupMax: 100, beforeMs: 60_000, minuteAfter: true };
const QUICK: Size = { pausedTasks: 20, liveTasks: 10, catchupMax: 20, beforeMs: 3_000, minuteAfter: false };

/**
 * Namespace team-a's every-minute tasks come back from a day's pause with `catchUp: all` (each
 * task's CATCHUP_MAX latest slots run) while team-b's every-second tasks run, one worker for all,
 * one handler for all: team-b's start lag before the resume and during the catch-up.
 */
export async function benchFairCatchUp(size: Size, catchupRate: number): Promise<FairCatchUpSide> {
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    api: true,
    sandbox: await openSandbox(undefined, 'bench'),
    env: { LOG_LEVEL: 'warn', CATCHUP_RATE: String(catchupRate), CATCHUP_MAX: String(size.catchupMax) },
  });
  try {
    for (const ns of ['team-a', 'team-b'])
      if ((await cluster.call('PUT', `/v1/namespaces/${ns}`, {})).status !== 201) throw new Error(`PUT ${ns}`);
    const dayAgo = new Date(Math.floor((Date.now() - 86_400_000) / 60_000) * 60_000);
    await insertTasks(cluster.db, size.pausedTasks, {
      prefix: 'team-a/report',
      nextRunAt: dayAgo,
      cron: '* * * * *',
      status: 'paused',
      createdAt: new Date(dayAgo.getTime() - 3_600_000),
    });
    const live = await cluster.createEverySecondTasks(size.liveTasks, {}, { prefix: 'team-b/tick', handler: 'noop' });
    // Warmed up first (the processes' first runs, their pools and compiled code), then team-b alone for `beforeMs`.
    await sleep(WARM_UP_MS + size.beforeMs);
    const resumedAt = Date.now();
    // Eight resumes at a time, as an operator's script would; each must succeed.
    let next = 1;
    const problems: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i <= size.pausedTasks; i = next++) {
          const res = await cluster.call('POST', `/v1/tasks/report-${i}/resume?namespace=team-a`, { catchUp: 'all' });
          if (res.status !== 200) problems.push(`resume report-${i}: ${res.status} ${JSON.stringify(res.body)}`);
        }
      }),
    );
    if (problems.length > 0) throw new Error(problems.slice(0, 3).join('; '));
    const resumedBy = Date.now();
    const catchUps = size.pausedTasks * size.catchupMax;
    await cluster.waitFor(
      async () => {
        const { rows } = await cluster.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM task_execution WHERE trigger = 'catchup' AND status = 'succeeded'`,
        );
        return rows[0]!.n >= catchUps;
      },
      600_000,
      'every catch-up run to succeed',
    );
    const doneAt = Date.now();
    // The first whole minute after the catch-up, with 2 s for its runs to start (and any handed run of team-a to have gone).
    const minuteAfter = Math.ceil((doneAt + 5_000) / 60_000) * 60_000;
    const until = size.minuteAfter ? minuteAfter + 1 : doneAt;
    await sleep(until - Date.now() + 2_000);
    const { rows } = await cluster.db.query<{ fire: Date; lag: number }>(
      `SELECT fire_at AS fire, extract(epoch FROM started_at - fire_at) * 1000 AS lag FROM task_execution
       WHERE task_id = ANY($1::uuid[]) AND started_at IS NOT NULL AND fire_at >= $2 AND fire_at < $3`,
      [live.ids, new Date(resumedAt - size.beforeMs), new Date(until)],
    );
    const lags = (from: number, to: number, instants: 'all' | 'off-minute' | 'minute' = 'all') =>
      summarize(
        rows
          .filter((r) => r.fire.getTime() >= from && r.fire.getTime() < to)
          .filter((r) => instants === 'all' || (r.fire.getTime() % 60_000 === 0) === (instants === 'minute'))
          .map((r) => Number(r.lag)),
      );
    return {
      catchupRate,
      catchUps,
      catchUpMs: doneAt - resumedAt,
      resumesMs: resumedBy - resumedAt,
      before: lags(resumedAt - size.beforeMs, resumedAt),
      resuming: lags(resumedAt, resumedBy),
      during: lags(resumedBy, doneAt),
      duringOffMinute: lags(resumedBy, doneAt, 'off-minute'),
      duringMinute: lags(resumedBy, doneAt, 'minute'),
      afterMinute: lags(doneAt, until, 'minute'),
    };
  } finally {
    await cluster.stop();
  }
}

/** The scenario: CATCHUP_RATE's default beside no pacing at all (every catch-up pushed when due). */
export async function fairCatchUpScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const size = opts.quick ? QUICK : FULL;
  const paced = await benchFairCatchUp(size, 200);
  const unpaced = await benchFairCatchUp(size, 1_000_000);
  const scenario =
    `fair catch-up: ${size.pausedTasks} every-minute tasks of team-a back from a day's pause ` +
    `(catchUp: all, ${paced.catchUps.toLocaleString('en')} runs) beside ${size.liveTasks} every-second tasks of team-b`;
  const rows: Row[] = [
    {
      scenario,
      measure:
        "team-b's start lag p99, before → during the catch-up (after the resumes), at instants team-a's own slots leave alone",
      punctual: `${ms(paced.before.p99)} → ${ms(paced.duringOffMinute.p99)}`,
      peer: `unpaced ${ms(unpaced.before.p99)} → ${ms(unpaced.duringOffMinute.p99)}`,
      ratio: ratio(paced.duringOffMinute.p99, Math.max(paced.before.p99, 1)),
      target: 'during ≤ 2× before',
      met: paced.duringOffMinute.p99 <= 2 * Math.max(paced.before.p99, 1),
    },
    {
      scenario,
      measure: `team-b's start lag p99, before → during, every instant (with team-a's ${size.pausedTasks} on-time slots each whole minute)`,
      punctual: `${ms(paced.before.p99)} → ${ms(paced.during.p99)}`,
      peer: `unpaced ${ms(unpaced.before.p99)} → ${ms(unpaced.during.p99)}`,
      ratio: ratio(paced.during.p99, Math.max(paced.before.p99, 1)),
      target: 'during ≤ 2× before',
      met: paced.during.p99 <= 2 * Math.max(paced.before.p99, 1),
    },
    {
      scenario,
      measure:
        "team-b's start lag p99 at team-a's whole minutes: during the catch-up → the first minute after it (no backlog)",
      punctual: `${ms(paced.duringMinute.p99)} → ${ms(paced.afterMinute.p99)}`,
      peer: `unpaced ${ms(unpaced.duringMinute.p99)} → ${ms(unpaced.afterMinute.p99)}`,
      ratio: '—',
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: "team-b's start lag p99 while the resumes write the catch-up runs",
      punctual: `${ms(paced.resuming.p99)} (${(paced.resumesMs / 1000).toFixed(1)} s of resumes)`,
      peer: `unpaced ${ms(unpaced.resuming.p99)} (${(unpaced.resumesMs / 1000).toFixed(1)} s)`,
      ratio: '—',
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: "team-b's start lag p50, before → during",
      punctual: `${ms(paced.before.p50)} → ${ms(paced.during.p50)}`,
      peer: `unpaced ${ms(unpaced.before.p50)} → ${ms(unpaced.during.p50)}`,
      ratio: '—',
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'the catch-up took (CATCHUP_RATE 200)',
      punctual: `${(paced.catchUpMs / 1000).toFixed(1)} s`,
      peer: `unpaced ${(unpaced.catchUpMs / 1000).toFixed(1)} s`,
      ratio: ratio(paced.catchUpMs, unpaced.catchUpMs),
      target: '—',
      met: null,
    },
  ];
  return { rows, data: { paced, unpaced }, problems: [] };
}
