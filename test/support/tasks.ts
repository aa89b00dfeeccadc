import type pg from 'pg';

/**
 * Inserts `count` tasks in one statement, named `<prefix>-1` … `<prefix>-<count>`, each with its
 * cursor on `nextRunAt`: a one-off at `runAt` when given, else the `cron` (every second by
 * default). The handler is `noop` unless given, with `payload`. Inserted `paused` when asked: a
 * leader already running never plans them before the pause (it would decide their past slots by
 * their misfire policy); created at `createdAt` when given (a task paused a day ago existed
 * before it). Returns their ids in name order.
 */
export async function insertTasks(
  db: pg.Client,
  count: number,
  options: {
    prefix: string;
    nextRunAt: Date;
    cron?: string;
    runAt?: Date;
    overlap?: 'skip' | 'allow';
    handler?: string;
    payload?: unknown;
    status?: 'active' | 'paused';
    createdAt?: Date;
  },
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO task (name, handler, schedule_kind, cron, run_at, secret, next_run_at, overlap, payload, status, created_at)
     SELECT $1 || '-' || n, $8, $2::schedule_kind, $3, $4, md5(n::text), $5, $6::overlap_policy, $9::jsonb, $10::task_status,
            coalesce($11::timestamptz, now())
     FROM generate_series(1, $7::int) AS n
     ORDER BY n
     RETURNING id`,
    [
      options.prefix,
      options.runAt ? 'at' : 'cron',
      options.runAt ? null : (options.cron ?? '* * * * * *'),
      options.runAt ?? null,
      options.nextRunAt,
      options.overlap ?? 'skip',
      count,
      options.handler ?? 'noop',
      JSON.stringify(options.payload ?? {}),
      options.status ?? 'active',
      options.createdAt ?? null,
    ],
  );
  return rows.map((r) => r.id);
}
