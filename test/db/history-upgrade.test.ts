import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { migrate } from '../../libs/db/src/migrator.js';
import { openSandbox, type Sandbox } from '../support/sandbox.js';
import { openRepositories } from '../support/repositories.js';

const MIGRATIONS = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));
/** The first migration of history partitioning: everything before it is the previous version's schema. */
const FIRST_NEW = '20261202100000_history_retention';
/** Rows of history the previous version left (HISTORY_UPGRADE_ROWS: the note's figures are for 3,000,000). */
const ROWS = Number(process.env.HISTORY_UPGRADE_ROWS ?? 1_000_000);
const TASKS = 1_000;
const DAY = 86_400_000;

/**
 * An installation of the previous version upgrades in place (DESIGN §3): a database migrated to the
 * schema before partitioning, holding history as that version wrote it (random ids, events with no
 * slot), is migrated while a writer keeps writing, and then every row is read back by id and by
 * task, its live rows claimed, no slot planned twice. The migrations' times and the longest any
 * statement of the writer waited are printed (docs/deploying.md reports them).
 */
describe('upgrading a database of the previous version to partitioned history', () => {
  let sandbox: Sandbox;
  let client: pg.Client;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  const previous = mkdtempSync(join(tmpdir(), 'punctual-previous-'));
  const ids: Record<string, string> = {};
  let taskIds: string[] = [];

  beforeAll(async () => {
    for (const name of readdirSync(MIGRATIONS)) {
      if (name < FIRST_NEW && name !== 'migration_lock.toml')
        cpSync(join(MIGRATIONS, name), join(previous, name), { recursive: true });
    }
    sandbox = await openSandbox(undefined, 'up');
    // openSandbox migrated it to the newest schema: start again from an empty one, at the previous version's.
    client = new pg.Client({ connectionString: sandbox.databaseUrl });
    await client.connect();
    await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await migrate(sandbox.databaseUrl, previous);

    const started = Date.now();
    await client.query(
      `INSERT INTO task (name, handler, schedule_kind, cron, secret, next_run_at)
       SELECT 'legacy-' || g, 'noop', 'cron', '* * * * *', 's', now() + interval '1 minute' FROM generate_series(1, ${TASKS}) g`,
    );
    taskIds = (await client.query<{ id: string }>('SELECT id FROM task ORDER BY name')).rows.map((r) => r.id);
    // Ten days of runs, as the previous version wrote them: random ids, one in a thousand dead.
    const perTask = Math.ceil(ROWS / TASKS);
    await client.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, exclusive, started_at, finished_at, queued_at, worker_id, attempt_id, error)
       SELECT gen_random_uuid(), t.id, t.name, s, s,
              CASE WHEN random() < 0.001 THEN 'dead' ELSE 'succeeded' END::execution_status, 1, 1, true, s, s + interval '1 second', s, 'w1', gen_random_uuid(), NULL
       FROM task t, generate_series(1, ${perTask}) i, LATERAL (SELECT now() - interval '10 days' + (i * interval '10 days' / ${perTask}) - interval '1 hour' AS s) x`,
    );
    await client.query(
      `INSERT INTO execution_event (execution_id, from_status, to_status, detail)
       SELECT id, 'running', 'dead', '{"error":"HTTP 500"}' FROM task_execution WHERE status = 'dead'`,
    );
    // The live rows of the moment: a planned slot, a running one, one between attempts — each of its own task.
    const live = async (status: string, taskId: string, extra = '') => {
      const id = randomUUID();
      ids[status] = id;
      await client.query(
        `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, exclusive ${extra ? ', attempt_id, lease_until, next_attempt_at' : ''})
         SELECT $1, t.id, t.name, date_trunc('second', now()) - interval '2 seconds', now() - interval '2 seconds', $2::execution_status,
                ${status === 'scheduled' ? 0 : 1}, 1, true ${extra}
         FROM task t WHERE t.id = $3`,
        [id, status, taskId],
      );
    };
    await live('scheduled', taskIds[0]!);
    await live('running', taskIds[1]!, `, gen_random_uuid(), now() + interval '1 minute', NULL`);
    await live('retrying', taskIds[2]!, `, NULL, NULL, now() - interval '1 second'`);
    ids.dead = (
      await client.query<{ id: string }>(`SELECT id FROM task_execution WHERE status = 'dead' LIMIT 1`)
    ).rows[0]!.id;
    await client.query('VACUUM ANALYZE task_execution');
    console.log(`previous version's history: ${ROWS} rows of ${TASKS} tasks written in ${Date.now() - started} ms`);
  }, 600_000);

  afterAll(async () => {
    await db?.close();
    await client?.end();
    await sandbox?.dispose();
    rmSync(previous, { recursive: true, force: true });
  });

  it('migrates while the previous version keeps writing: the writer waits milliseconds, never for a scan or a build', async () => {
    // The previous version at work: each statement claims, then ends a run, as its workers did.
    let writing = true;
    let longest = 0;
    let statements = 0;
    const writer = new pg.Client({ connectionString: sandbox.databaseUrl });
    await writer.connect();
    const work = (async () => {
      for (let i = 0; writing; i += 1) {
        const started = performance.now();
        await writer.query(
          `UPDATE task_execution SET heartbeat_at = now() WHERE id = (SELECT id FROM task_execution WHERE task_id = $1 ORDER BY scheduled_for DESC LIMIT 1)`,
          [taskIds[100 + (i % 800)]],
        );
        longest = Math.max(longest, performance.now() - started);
        statements += 1;
      }
    })();
    const times: string[] = [];
    const applied: string[] = [];
    // The five of the history, and any that came after them.
    const upgrade = readdirSync(MIGRATIONS)
      .filter((n) => n >= FIRST_NEW && n !== 'migration_lock.toml')
      .sort();
    for (const name of upgrade) {
      cpSync(join(MIGRATIONS, name), join(previous, name), { recursive: true });
      const started = performance.now();
      applied.push(...(await migrate(sandbox.databaseUrl, previous)));
      times.push(`${name}: ${Math.round(performance.now() - started)} ms`);
    }
    writing = false;
    await work;
    await writer.end();
    console.log(
      `migrations over ${ROWS} rows:\n  ${times.join('\n  ')}\nthe writer's longest statement: ${longest.toFixed(1)} ms (of ${statements})`,
    );
    expect(applied).toEqual(upgrade);
    expect(applied.length).toBeGreaterThanOrEqual(5);
    expect(statements).toBeGreaterThan(10);
    // Only catalog changes hold a lock that stops a writer: no scan and no index build under one.
    expect(longest).toBeLessThan(2_000);
    db = await openRepositories(sandbox.config());
  }, 600_000);

  it('keeps every row where a read by id and by task finds it, with its events', async () => {
    const [{ n }] = (await client.query<{ n: string }>('SELECT count(*) AS n FROM task_execution_legacy')).rows;
    expect(Number(n)).toBeGreaterThanOrEqual(ROWS + 3);
    expect((await client.query('SELECT count(*)::int AS n FROM task_execution')).rows[0].n).toBe(Number(n));
    for (const status of ['scheduled', 'running', 'retrying', 'dead']) {
      const found = await db.queries.findById(ids[status]!);
      expect(found, status).toMatchObject({ id: ids[status], status });
    }
    expect((await db.queries.findById(ids.dead!))!.events.map((e) => e.toStatus)).toContain('dead');
    const byTask = await db.queries.list({ namespace: 'default', taskName: 'legacy-500' }, 5);
    expect(byTask).toHaveLength(5);
    expect(byTask.every((e) => e.taskName === 'legacy-500')).toBe(true);
  });

  it('plans no slot twice, claims the live rows it left, and puts new slots in partitions of their own', async () => {
    const kept = (await db.prisma.taskExecution.findFirstOrThrow({ where: { taskId: taskIds[700] } })).scheduledFor;
    const again = await db.prisma.$transaction((tx) =>
      db.executions.insertPlanned(
        [
          {
            id: executionIdFor(kept),
            taskId: taskIds[700]!,
            taskName: 'legacy-700',
            scheduledFor: kept,
            fireAt: kept,
            trigger: 'schedule',
            status: 'scheduled',
            taskVersion: 1,
            exclusive: true,
          },
        ],
        tx,
      ),
    );
    expect(again).toEqual([]);
    expect(await db.claim({ id: ids.scheduled!, attemptId: randomUUID(), workerId: 'w-new' })).toMatchObject({
      kind: 'run',
    });
    expect(await db.claim({ id: ids.retrying!, attemptId: randomUUID(), workerId: 'w-new' })).toMatchObject({
      kind: 'run',
    });
    // The table as it was keeps the slots before the day after tomorrow; later ones get partitions of their own.
    const later = new Date(Date.now() + 3 * DAY);
    await db.historyAt(later);
    const partition = (await db.partitions.list()).find((p) => p.from && p.from <= later && later < p.to)!;
    expect(partition.legacy).toBe(false);
    expect((await db.partitions.list())[0]!.legacy).toBe(true);
  });
});
