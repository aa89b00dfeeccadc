import pg from 'pg';
import { Cluster } from '../../test/support/cluster.js';
import { openSandbox } from '../../test/support/sandbox.js';
import type { BenchOptions } from '../support/options.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, summarize, type Summary } from '../support/stats.js';

const MINUTE = 60_000;
const DAY = 1_440 * MINUTE;
const SLOTS = 31 * 1_440;

export interface TimelineResult {
  tasks: number;
  auditEntries: number;
  executions: number;
  /** ms per page of 1,000 of the 31-day timeline, over every page, `passes` times. */
  pages: Summary;
  pagesPerPass: number;
  slotsPerPass: number;
  /** ms per page of 500 of the same task's executions (`GET /v1/tasks/{name}/executions`): the plain list beside it. */
  executionPages: Summary;
}

/**
 * DESIGN §10 "timeline": the 31-day timeline of an every-minute task (44,640 slots) read page by
 * page through a real API process, with `tasks` tasks (and their audit entries) in the database and
 * a month of the task's own executions (succeeded, some skipped and dead) — beside the plain list of
 * its executions, which reads the same rows without the schedule math or the explanations.
 */
export async function benchTimeline(tasks: number, passes: number): Promise<TimelineResult> {
  const sandbox = await openSandbox(undefined, 'bench');
  const db = new pg.Client({ connectionString: sandbox.databaseUrl });
  db.on('error', () => undefined);
  await db.connect();
  let cluster: Cluster | null = null;
  try {
    for (let i = 0; i < tasks; i += 100_000) {
      const [from, to] = [i + 1, Math.min(tasks, i + 100_000)];
      await db.query(
        `INSERT INTO task (name, handler, schedule_kind, cron, secret, next_run_at)
         SELECT 'idle-' || n, 'noop', 'cron', '0 3 * * *', md5(n::text), now() + interval '6 hours' FROM generate_series($1::int, $2::int) AS n`,
        [from, to],
      );
      await db.query(
        `INSERT INTO audit_log (actor, action, target, after)
         SELECT 'admin-api-key', 'task.create', 'idle-' || n, jsonb_build_object('name', 'idle-' || n) FROM generate_series($1::int, $2::int) AS n`,
        [from, to],
      );
    }
    cluster = await Cluster.start({ schedulers: 0, workers: 0, api: true, sandbox, env: { LOG_LEVEL: 'warn' } });
    const created = await cluster.call('POST', '/v1/tasks', {
      name: 'minutely',
      handler: 'noop',
      schedule: { cron: '* * * * *' },
    });
    if (created.status !== 201)
      throw new Error(`could not create the task: ${created.status} ${JSON.stringify(created.body)}`);
    // Created 31 days and an hour ago; a month of its slots ran (one in 97 skipped, one in 389 dead).
    const start = Math.floor((Date.now() - 31 * DAY - 60 * MINUTE) / MINUTE) * MINUTE;
    await db.query(`UPDATE task SET created_at = $1 WHERE name = 'minutely'`, [new Date(start)]);
    await db.query(
      `UPDATE audit_log SET at = $1, after = jsonb_set(after, '{createdAt}', to_jsonb($2::text)) WHERE target = 'minutely'`,
      [new Date(start), new Date(start).toISOString()],
    );
    // The month's daily partitions, as the history pass makes them ahead of the slots it plans.
    for (let day = Math.floor(start / DAY) * DAY; day <= start + (SLOTS + 60) * MINUTE; day += DAY)
      await db.query('SELECT punctual_create_history_partition($1, $2)', [
        new Date(day).toISOString(),
        new Date(day + DAY).toISOString(),
      ]);
    await db.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, task_version, status, skip_reason, attempt, started_at, finished_at, error)
       SELECT punctual_execution_id(s), t.id, t.name, s, s, 1,
              (CASE WHEN n % 389 = 0 THEN 'dead' WHEN n % 97 = 0 THEN 'skipped' ELSE 'succeeded' END)::execution_status,
              (CASE WHEN n % 97 = 0 AND n % 389 <> 0 THEN 'overlap' END)::skip_reason,
              CASE WHEN n % 97 = 0 AND n % 389 <> 0 THEN 0 ELSE 1 END,
              CASE WHEN n % 97 = 0 AND n % 389 <> 0 THEN NULL ELSE s + interval '3 milliseconds' END,
              s + interval '200 milliseconds',
              CASE WHEN n % 389 = 0 THEN 'HTTP 503' END
       FROM task t, generate_series(1, $2::int) AS n, LATERAL (SELECT $1::timestamptz + n * interval '1 minute' AS s) x
       WHERE t.name = 'minutely'`,
      [new Date(start), SLOTS + 60],
    );
    await db.query('ANALYZE');
    const from = new Date(start + MINUTE).toISOString();
    const to = new Date(start + SLOTS * MINUTE).toISOString();

    const timed = async (path: string) => {
      const t0 = performance.now();
      const res = await cluster!.call('GET', path);
      if (res.status !== 200)
        throw new Error(`GET ${path} answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      return {
        ms: performance.now() - t0,
        body: res.body as { items: { outcome: string }[]; nextCursor: string | null },
      };
    };
    const pages: number[] = [];
    let pagesPerPass = 0;
    let slotsPerPass = 0;
    for (let pass = 0; pass < passes; pass += 1) {
      let cursor: string | null = null;
      let [n, slots] = [0, 0];
      do {
        const { ms: took, body } = await timed(
          `/v1/tasks/minutely/timeline?from=${from}&to=${to}&limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
        );
        pages.push(took);
        n += 1;
        slots += body.items.length;
        cursor = body.nextCursor;
      } while (cursor);
      [pagesPerPass, slotsPerPass] = [n, slots];
    }
    const executionPages: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < pages.length; i += 1) {
      const { ms: took, body } = await timed(
        `/v1/tasks/minutely/executions?limit=500${cursor ? `&cursor=${cursor}` : ''}`,
      );
      executionPages.push(took);
      cursor = body.nextCursor;
    }
    const { rows } = await db.query(
      `SELECT (SELECT count(*) FROM task)::int AS tasks, (SELECT count(*) FROM audit_log)::int AS audit, (SELECT count(*) FROM task_execution)::int AS executions`,
    );
    return {
      tasks: rows[0].tasks,
      auditEntries: rows[0].audit,
      executions: rows[0].executions,
      pages: summarize(pages),
      pagesPerPass,
      slotsPerPass,
      executionPages: summarize(executionPages),
    };
  } finally {
    await db.end();
    // A cluster stops its sandbox with it.
    if (cluster) await cluster.stop();
    else await sandbox.dispose();
  }
}

/** The timeline scenario as table rows: 1,000,000 tasks (quick: 2,000, one pass). */
export async function timelineScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = await benchTimeline(opts.quick ? 2_000 : 1_000_000, opts.quick ? 1 : 3);
  const scenario = `timeline, 31 days of an every-minute task, ${r.tasks.toLocaleString('en')} tasks`;
  const rows: Row[] = [
    {
      scenario,
      measure: `page of 1,000 slots p50 / p99 (${r.pages.n} pages)`,
      punctual: `${ms(r.pages.p50)} / ${ms(r.pages.p99)}`,
      peer: `its executions, page of 500: ${ms(r.executionPages.p50)} / ${ms(r.executionPages.p99)}`,
      ratio: ratio(r.pages.p99, r.executionPages.p99),
      target: 'p99 ≤ 200 ms',
      met: r.pages.p99 <= 200,
    },
  ];
  const problems =
    r.slotsPerPass === SLOTS
      ? []
      : [`timeline: ${r.slotsPerPass} slots listed over 31 days of an every-minute task, not ${SLOTS}`];
  return { rows, data: r, problems };
}
