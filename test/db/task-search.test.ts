import { beforeAll, describe, expect, it } from 'vitest';
import { useRepositorySandbox } from '../support/api-sandbox.js';
import { waitFor } from '../support/processes.js';

const TASKS = 20_000;

/**
 * The task list's search (`?q=`) reads the rows that match through the trigram indexes, not the
 * whole table: counted by Postgres' own index statistics while the repository's real statement runs
 * over 20,000 tasks. How fast it is at 1,000,000 is the bench's (`scale --large`).
 */
describe('task search by substring', () => {
  const ctx = useRepositorySandbox();

  beforeAll(async () => {
    await ctx.client.query(
      `INSERT INTO task (name, handler, schedule_kind, cron, secret, next_run_at, description)
       SELECT 'user-' || n || '-' || md5(n::text), 'noop', 'cron', '0 9 * * *', md5(n::text), now() + interval '1 day',
              CASE WHEN n % 2 = 0 THEN 'reminder for customer ' || n || ' of 50% off' END
       FROM generate_series(1, $1::int) n`,
      [TASKS],
    );
    // As autovacuum would soon after a bulk insert: statistics, and the trigram indexes' pending entries merged.
    await ctx.client.query('VACUUM ANALYZE task');
  });

  /** Index scans of each trigram index so far, as Postgres counts them. */
  async function trigramScans(): Promise<Record<string, number>> {
    await ctx.client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await ctx.client.query(
      `SELECT indexrelname AS name, idx_scan::int AS scans FROM pg_stat_user_indexes WHERE indexrelname IN ('task_bare_name_trgm_idx', 'task_description_trgm_idx')`,
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.scans]));
  }

  it('finds by a piece of the name or of the description, through both trigram indexes', async () => {
    const before = await trigramScans();
    expect(Object.keys(before).sort()).toEqual(['task_bare_name_trgm_idx', 'task_description_trgm_idx']);
    // A piece of one task's name (md5 of 4242), and of one task's description.
    const byName = await ctx.db.tasks.list({ namespace: 'default', q: 'fe7ecc4de2' }, 50);
    expect(byName.map((t) => t.name)).toEqual(['user-4242-fe7ecc4de28b2c83c016b5c6c2acd826']);
    const byDescription = await ctx.db.tasks.list({ namespace: 'default', q: 'customer 17778 ' }, 50);
    expect(byDescription.map((t) => t.name)).toEqual([expect.stringMatching(/^user-17778-/)]);
    // LIKE's own characters are searched for as they are: "50% off" matches the half that says it,
    // and "_0% off" nothing (a `_` taken as LIKE's any-character would match "50% off").
    const percent = await ctx.db.tasks.list({ namespace: 'default', q: '50% off' }, 5);
    expect(percent).toHaveLength(5);
    for (const t of percent) expect(t.description).toContain('50% off');
    expect(await ctx.db.tasks.list({ namespace: 'default', q: '_0% off' }, 5)).toEqual([]);
    // A backend reports its counts when idle, at most every 10 s (PGSTAT_IDLE_INTERVAL).
    const after = await waitFor(
      async () => {
        const now = await trigramScans();
        return now.task_bare_name_trgm_idx! > before.task_bare_name_trgm_idx! &&
          now.task_description_trgm_idx! > before.task_description_trgm_idx!
          ? now
          : null;
      },
      15_000,
      'both trigram indexes counted as scanned',
    );
    expect(after.task_bare_name_trgm_idx).toBeGreaterThan(before.task_bare_name_trgm_idx!);
    expect(after.task_description_trgm_idx).toBeGreaterThan(before.task_description_trgm_idx!);
  });

  it('keeps trigram indexes off the key: no lookup by name can be served by one', async () => {
    // pg_trgm's GIN class answers `=` too. Over the key itself, the bench's planner (100,000 tasks
    // bulk-loaded, never vacuumed) chose it over the unique btree for a batch's 1,000 lookups by
    // name: 6 ms each, seconds a call. Indexed on the bare name (an expression), it serves searches
    // of that expression only.
    const { rows } = await ctx.client.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'task' AND indexdef LIKE '%gin_trgm_ops%' ORDER BY indexname`,
    );
    expect(rows.map((r) => r.indexname)).toEqual(['task_bare_name_trgm_idx', 'task_description_trgm_idx']);
    for (const r of rows) expect(r.indexdef, r.indexname).not.toMatch(/\(name gin_trgm_ops\)/);
    const { rows: plan } = await ctx.client.query(`EXPLAIN SELECT id FROM task WHERE name = $1`, ['user-1-x']);
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toContain('task_name_key');
  });
});
