import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_DIRECT, SUCCEED_AND_HAND_OVER } from '../../libs/db/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

const DAY = 86_400_000;
const HISTORY_DAYS = 40;
const TASKS = 200;
const RUNS = 25;

/**
 * What partitioning costs the claim path, counted in buffers (DESIGN §3; the bound: 1.1×):
 * the same 40 days of history, in one partition (the table as it was) and in 40 daily ones with
 * the live horizon at today — the fenced claim and the success (with its hand-over) of a run,
 * prepared as the worker prepares them, each measured over many runs.
 */
describe('the claim path with 40 daily partitions of history against one table', () => {
  const layouts = { single: {} as Layout, daily: {} as Layout };

  interface Layout {
    sandbox: Sandbox;
    db: Awaited<ReturnType<typeof openRepositories>>;
    client: pg.Client;
    tasks: string[];
  }

  async function open(daily: boolean): Promise<Layout> {
    const sandbox = await createSandbox();
    const db = await openRepositories(sandbox.config());
    const client = new pg.Client({ connectionString: sandbox.databaseUrl });
    await client.connect();
    const today = Math.floor(Date.now() / DAY) * DAY;
    const from = today - HISTORY_DAYS * DAY;
    if (!daily) {
      // One partition for everything, as the table was: the fresh ones (empty) make way for it.
      for (const p of await db.partitions.list()) await db.partitions.drop(p);
      await client.query('SELECT punctual_create_history_partition($1, $2)', [
        new Date(from).toISOString(),
        new Date(today + 2 * DAY).toISOString(),
      ]);
      await db.partitions.list();
    } else {
      await db.partitions.ensureCovered(
        Array.from({ length: HISTORY_DAYS }, (_, i) => new Date(from + i * DAY)),
        DAY,
      );
    }
    await client.query(
      `INSERT INTO task (name, handler, schedule_kind, cron, secret)
       SELECT 'cost-' || g, 'noop', 'cron', '* * * * *', 's' FROM generate_series(1, ${TASKS}) g`,
    );
    const tasks = (await client.query<{ id: string }>('SELECT id FROM task ORDER BY name')).rows.map((r) => r.id);
    // 40 days of ended runs of every task, every 36 minutes: 320,000 rows.
    await client.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, started_at, finished_at)
       SELECT punctual_execution_id(s), t.id, t.name, s, s, 'succeeded', 1, 1, s, s + interval '1 second'
       FROM task t, generate_series($1::timestamptz, $2::timestamptz - interval '1 hour', interval '36 minutes') s`,
      [new Date(from).toISOString(), new Date(Date.now()).toISOString()],
    );
    await client.query('VACUUM ANALYZE task_execution');
    await db.horizon.raise();
    return { sandbox, db, client, tasks };
  }

  beforeAll(async () => {
    layouts.single = await open(false);
    layouts.daily = await open(true);
  }, 300_000);
  afterAll(async () => {
    for (const l of Object.values(layouts)) {
      await l.client?.end();
      await l.db?.close();
      await l.sandbox?.dispose();
    }
  });

  /** Buffers read (hit or not) by one execution of a prepared statement, planning included. */
  async function buffers(client: pg.Client, execute: string): Promise<number> {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${execute}`);
    const [plan] = rows[0]['QUERY PLAN'] as { Plan: Record<string, number>; Planning?: Record<string, number> }[];
    const of = (n: Record<string, number> | undefined) =>
      (n?.['Shared Hit Blocks'] ?? 0) + (n?.['Shared Read Blocks'] ?? 0);
    if (process.env.DEBUG_COST)
      console.log(execute.slice(0, 20), 'plan', of(plan!.Plan), 'planning', of(plan!.Planning));
    return of(plan!.Plan) + of(plan!.Planning);
  }

  /** The median buffers of a claim and of a success over `RUNS` runs of a layout, prepared as a worker's statements are. */
  async function measure(layout: Layout, as: string): Promise<{ claim: number; success: number; partitions: number }> {
    const { client, tasks } = layout;
    await client.query(`PREPARE claim_${as} (uuid[], uuid[], float8[], int[], text[], int, text[]) AS ${CLAIM_DIRECT}`);
    await client.query(`PREPARE succeed_${as} (uuid[], uuid[], jsonb[]) AS ${SUCCEED_AND_HAND_OVER}`);
    const claims: number[] = [];
    const successes: number[] = [];
    for (let i = 0; i < RUNS + 6; i += 1) {
      const slot = new Date(Date.now() - 1000);
      const [{ id }] = (
        await client.query<{ id: string }>(
          `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, task_version)
           SELECT punctual_execution_id($1), t.id, t.name, $1, $1, 'scheduled', 1 FROM task t WHERE t.id = $2 RETURNING id`,
          [slot.toISOString(), tasks[i % tasks.length]],
        )
      ).rows;
      const attempt = randomUUID();
      const claim = await buffers(
        client,
        `EXECUTE claim_${as}(ARRAY['${id}']::uuid[], ARRAY['${attempt}']::uuid[], ARRAY[NULL]::float8[], ARRAY[0], ARRAY['w'], 30000, ARRAY['noop'])`,
      );
      const success = await buffers(
        client,
        `EXECUTE succeed_${as}(ARRAY['${id}']::uuid[], ARRAY['${attempt}']::uuid[], ARRAY[NULL]::jsonb[])`,
      );
      // The first few plan afresh (custom plans), as a new connection's do; then Postgres may keep a generic one.
      if (i >= 6) {
        claims.push(claim);
        successes.push(success);
      }
    }
    const [{ n }] = (
      await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'task_execution'::regclass`,
      )
    ).rows;
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return { claim: median(claims), success: median(successes), partitions: n };
  }

  it('reads no more than 1.1× the buffers of one table for a claim and for a success', async () => {
    // Most of the day the live horizon and the partitions ahead leave the claim path one partition:
    // today's (tomorrow's is made ten minutes before it starts, see HistoryKeeper).
    const tomorrow = (await layouts.daily.db.partitions.list()).find((p) => p.from!.getTime() > Date.now());
    if (tomorrow && tomorrow.from!.getTime() - Date.now() > 10 * 60_000)
      await layouts.daily.db.partitions.drop(tomorrow);
    const single = await measure(layouts.single, 'a');
    const daily = await measure(layouts.daily, 'a');
    console.log(
      `buffers per run (median of ${RUNS}): one partition — claim ${single.claim}, success ${single.success}; ` +
        `${daily.partitions} daily partitions — claim ${daily.claim}, success ${daily.success}`,
    );
    expect(single.partitions).toBe(1);
    expect(daily.partitions).toBeGreaterThanOrEqual(HISTORY_DAYS);
    expect(daily.claim).toBeLessThanOrEqual(single.claim * 1.1);
    expect(daily.success).toBeLessThanOrEqual(single.success * 1.1);
    // Within ten minutes of midnight, tomorrow's partition is there too: said, not bounded.
    await layouts.daily.db.partitions.ensureCovered([new Date(Date.now() + DAY)], DAY);
    const ahead = await measure(layouts.daily, 'b');
    console.log(`…with tomorrow's partition made ahead: claim ${ahead.claim}, success ${ahead.success}`);
  });
});
