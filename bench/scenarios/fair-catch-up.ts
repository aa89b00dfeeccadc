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
   * The same during the catch-up, of team-b's instants that are not a whole minute: once resumed,
   * team-a's 200 tasks run on time every minute too, and at those instants team-b's 50 runs start
   * beside 200 on-time runs of team-a — on-time load, not the catch-up's.
   */
  duringOffMinute: Summary;
}

interface Size {
  pausedTasks: number;
  liveTasks: number;
  catchupMax: number;
  beforeMs: number;
}
const FULL: Size = { pausedTasks: 200, liveTasks: 50, catchupMax: 100, beforeMs: 10_000 };
const QUICK: Size = { pausedTasks: 20, liveTasks: 10, catchupMax: 20, beforeMs: 3_000 };

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
    const paused = await insertTasks(cluster.db, size.pausedTasks, {
      prefix: 'team-a/report',
      nextRunAt: dayAgo,
      cron: '* * * * *',
    });
    await cluster.db.query(
      `UPDATE task SET status = 'paused', created_at = $2::timestamptz - interval '1 hour' WHERE id = ANY($1::uuid[])`,
      [paused, dayAgo],
    );
    const live = await cluster.createEverySecondTasks(size.liveTasks, {}, { prefix: 'team-b/tick', handler: 'noop' });
    await sleep(size.beforeMs + 1_000);
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
    await sleep(2_000);
    const { rows } = await cluster.db.query<{ fire: Date; lag: number }>(
      `SELECT fire_at AS fire, extract(epoch FROM started_at - fire_at) * 1000 AS lag FROM task_execution
       WHERE task_id = ANY($1::uuid[]) AND started_at IS NOT NULL AND fire_at >= $2 AND fire_at < $3`,
      [live.ids, new Date(resumedAt - size.beforeMs), new Date(doneAt)],
    );
    const lags = (from: number, to: number, offMinute = false) =>
      summarize(
        rows
          .filter((r) => r.fire.getTime() >= from && r.fire.getTime() < to)
          .filter((r) => !offMinute || r.fire.getTime() % 60_000 !== 0)
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
      duringOffMinute: lags(resumedBy, doneAt, true),
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
      measure: "team-b's start lag p99 during, every instant (with team-a's 200 on-time runs each whole minute)",
      punctual: ms(paced.during.p99),
      peer: `unpaced ${ms(unpaced.during.p99)}`,
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
