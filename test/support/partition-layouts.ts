import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { CLAIM_DIRECT, SUCCEED_AND_HAND_OVER } from '../../libs/db/src/index.js';
import { openRepositories } from './repositories.js';
import type { Sandbox } from './sandbox.js';

const DAY = 86_400_000;

/** A database holding `days` days of ended runs of `tasks` tasks, in one partition or in one a day. */
export interface PartitionLayout {
  sandbox: Sandbox;
  db: Awaited<ReturnType<typeof openRepositories>>;
  client: pg.Client;
  tasks: string[];
}

/**
 * Fills `sandbox` with `days` days of ended runs of `tasks` tasks, a run every `everyMinutes`, in
 * one partition for everything (`daily` false: the table as it was) or in a partition a day, with
 * the live horizon raised (today's partition, and tomorrow's only within ten minutes of midnight,
 * as the history pass leaves them).
 */
export async function openLayout(
  sandbox: Sandbox,
  options: { daily: boolean; days: number; tasks: number; everyMinutes: number },
): Promise<PartitionLayout> {
  const db = await openRepositories(sandbox.config());
  const client = new pg.Client({ connectionString: sandbox.databaseUrl });
  await client.connect();
  const today = Math.floor(Date.now() / DAY) * DAY;
  const from = today - options.days * DAY;
  if (!options.daily) {
    for (const p of await db.partitions.list()) await db.partitions.drop(p);
    await client.query('SELECT punctual_create_history_partition($1, $2)', [
      new Date(from).toISOString(),
      new Date(today + 2 * DAY).toISOString(),
    ]);
    await db.partitions.list();
  } else {
    await db.partitions.ensureCovered(
      Array.from({ length: options.days }, (_, i) => new Date(from + i * DAY)),
      DAY,
    );
    const tomorrow = (await db.partitions.list()).find((p) => p.from!.getTime() > Date.now());
    if (tomorrow && tomorrow.from!.getTime() - Date.now() > 10 * 60_000) await db.partitions.drop(tomorrow);
  }
  await client.query(
    `INSERT INTO task (name, handler, schedule_kind, cron, secret)
     SELECT 'cost-' || g, 'noop', 'cron', '* * * * *', 's' FROM generate_series(1, ${options.tasks}) g`,
  );
  const tasks = (await client.query<{ id: string }>('SELECT id FROM task ORDER BY name')).rows.map((r) => r.id);
  await client.query(
    `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, started_at, finished_at)
     SELECT punctual_execution_id(s), t.id, t.name, s, s, 'succeeded', 1, 1, s, s + interval '1 second'
     FROM task t, generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', $3 * interval '1 minute') s`,
    [new Date(from).toISOString(), new Date().toISOString(), options.everyMinutes],
  );
  await client.query('VACUUM ANALYZE task_execution');
  await db.horizon.raise();
  return { sandbox, db, client, tasks };
}

/** What one run's claim and success cost: buffers read (planning included), and time. */
export interface RunCost {
  buffers: number;
  ms: number;
}

/**
 * `runs` runs of the layout's tasks, each claimed (CLAIM_DIRECT) and recorded (SUCCEED_AND_HAND_OVER)
 * through statements prepared as `as` on the layout's own session, as a worker prepares them — the
 * first few not counted (a fresh connection's first plans) — with the buffers of each (EXPLAIN
 * ANALYZE BUFFERS, when `explain`) or the time of each.
 */
export async function measureRuns(
  layout: PartitionLayout,
  as: string,
  runs: number,
  explain: boolean,
): Promise<{ claim: RunCost[]; success: RunCost[]; partitions: number }> {
  const { client, tasks } = layout;
  await client.query(`PREPARE claim_${as} (uuid[], uuid[], float8[], int[], text[], int, text[]) AS ${CLAIM_DIRECT}`);
  await client.query(`PREPARE succeed_${as} (uuid[], uuid[], jsonb[]) AS ${SUCCEED_AND_HAND_OVER}`);
  const claim: RunCost[] = [];
  const success: RunCost[] = [];
  const run = async (execute: string): Promise<RunCost> => {
    const started = performance.now();
    if (!explain) {
      await client.query(execute);
      return { buffers: 0, ms: performance.now() - started };
    }
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${execute}`);
    const [plan] = rows[0]['QUERY PLAN'] as { Plan: Record<string, number>; Planning?: Record<string, number> }[];
    const of = (n: Record<string, number> | undefined) =>
      (n?.['Shared Hit Blocks'] ?? 0) + (n?.['Shared Read Blocks'] ?? 0);
    return { buffers: of(plan!.Plan) + of(plan!.Planning), ms: performance.now() - started };
  };
  for (let i = 0; i < runs + 6; i += 1) {
    const slot = new Date(Date.now() - 1000);
    const [{ id }] = (
      await client.query<{ id: string }>(
        `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, task_version)
         SELECT punctual_execution_id($1), t.id, t.name, $1, $1, 'scheduled', 1 FROM task t WHERE t.id = $2 RETURNING id`,
        [slot.toISOString(), tasks[i % tasks.length]],
      )
    ).rows;
    const attempt = randomUUID();
    const claimed = await run(
      `EXECUTE claim_${as}(ARRAY['${id}']::uuid[], ARRAY['${attempt}']::uuid[], ARRAY[NULL]::float8[], ARRAY[0], ARRAY['w'], 30000, ARRAY['noop'])`,
    );
    const recorded = await run(
      `EXECUTE succeed_${as}(ARRAY['${id}']::uuid[], ARRAY['${attempt}']::uuid[], ARRAY[NULL]::jsonb[])`,
    );
    // The first few plan afresh (custom plans), as a new connection's do; then Postgres may keep a generic one.
    if (i >= 6) {
      claim.push(claimed);
      success.push(recorded);
    }
  }
  const [{ n }] = (
    await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'task_execution'::regclass`,
    )
  ).rows;
  return { claim, success, partitions: n };
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function closeLayout(layout: PartitionLayout | undefined): Promise<void> {
  await layout?.client.end();
  await layout?.db.close();
  await layout?.sandbox.dispose();
}
