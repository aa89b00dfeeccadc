import { Injectable } from '@nestjs/common';
import { inShard, type LeaderFence } from '../epoch-fence.js';
import { Prisma, type Task } from '../generated/prisma/client.js';
import { type Db, PrismaService } from '../prisma.service.js';
import { taskColumns, taskFromColumns } from './task.row.js';

/** A task's cursor moved past the slots it planned. */
export interface CursorMove {
  id: string;
  /** The next slot not yet planned; null once the schedule has no more slots. */
  nextRunAt: Date | null;
  lastScheduledFor: Date | null;
  missed: number;
  /** Slots planned to run: counted down from a run limit (`remaining_runs`). */
  runs?: number;
}

/** A task whose slots could not be computed: its cursor stays, the error is shown on it. */
export interface PlanError {
  id: string;
  error: string;
}

/** How long the planner leaves a task whose slots it could not compute before trying again. */
export const PLAN_ERROR_RETRY_MS = 60_000;

/** The planner's side of the `task` table: the tasks due for planning, their cursors, their planning errors. */
@Injectable()
export class TaskCursorsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Locks up to `limit` active tasks due for planning, skipping rows another transaction holds:
   * first those whose cursor is at or before `horizon`, oldest cursor first, then one-offs whose
   * instant is at or before `oneOffHorizon` (a campaign is planned as it is created, not in the
   * last seconds before its instant). Each is one ordered scan of a partial index, so idle and
   * paused tasks cost nothing; whole rows in one statement each. A task whose last planning
   * failed waits {@link PLAN_ERROR_RETRY_MS}. Only tasks of the leader's shard (`shard`).
   */
  async lockDue(horizon: Date, oneOffHorizon: Date, limit: number, db: Db, shard: LeaderFence = 0n): Promise<Task[]> {
    const lock = async (where: Prisma.Sql, n: number) => {
      const rows = await db.$queryRaw<Record<string, unknown>[]>`
        SELECT ${Prisma.raw(taskColumns('task', 't_'))} FROM task WHERE ${where} ${inShard(Prisma.sql`id`, shard)} ORDER BY next_run_at LIMIT ${n} FOR UPDATE SKIP LOCKED`;
      return rows.map((row) => taskFromColumns(row, 't_')!);
    };
    const due = await lock(dueBy(horizon), limit);
    if (due.length >= limit || oneOffHorizon <= horizon) return due;
    return due.concat(await lock(oneOffDueBy(horizon, oneOffHorizon), limit - due.length));
  }

  /** Whether {@link lockDue} would find a task (locked ones included): two indexed looks, no transaction. */
  async anyDue(horizon: Date, oneOffHorizon: Date, shard: LeaderFence = 0n): Promise<boolean> {
    const of = inShard(Prisma.sql`id`, shard);
    const [row] = await this.prisma.$queryRaw<{ due: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM task WHERE ${dueBy(horizon)} ${of}) OR EXISTS (SELECT 1 FROM task WHERE ${oneOffDueBy(horizon, oneOffHorizon)} ${of}) AS due`;
    return row!.due;
  }

  /**
   * Moves many cursors in one statement; a task whose schedule has no more slots (cursor null) is
   * `completed`. A task planned again after an error has the error cleared. A task whose run limit
   * this spends gets an audit entry `task.complete` by `scheduler` (its last definition, completed,
   * with the last slot planned as `lastScheduledFor`): the timeline reads the slots after it as
   * not planned for the run limit.
   */
  async advanceCursors(advances: CursorMove[], db: Db): Promise<void> {
    if (advances.length === 0) return;
    const at = (d: Date | null) => d?.toISOString() ?? null;
    await db.$executeRaw`
      WITH moved AS (
        UPDATE task t SET
          next_run_at = u.next_run_at,
          last_scheduled_for = COALESCE(u.last_scheduled_for, t.last_scheduled_for),
          missed_count = t.missed_count + u.missed,
          remaining_runs = CASE WHEN t.remaining_runs IS NULL THEN NULL ELSE GREATEST(0, t.remaining_runs - u.runs) END,
          status = CASE WHEN u.next_run_at IS NULL THEN 'completed'::task_status ELSE t.status END,
          last_error = NULL,
          last_error_at = NULL
        FROM unnest(
          ${advances.map((a) => a.id)}::uuid[],
          ${advances.map((a) => at(a.nextRunAt))}::timestamptz[],
          ${advances.map((a) => at(a.lastScheduledFor))}::timestamptz[],
          ${advances.map((a) => a.missed)}::bigint[],
          ${advances.map((a) => a.runs ?? 0)}::int[]
        ) AS u(id, next_run_at, last_scheduled_for, missed, runs)
        JOIN task o ON o.id = u.id
        WHERE t.id = u.id
        RETURNING t.name, t.last_scheduled_for, o.remaining_runs > 0 AND t.remaining_runs = 0 AS spent
      )
      INSERT INTO audit_log (actor, action, target, before, after)
      SELECT 'scheduler', 'task.complete', m.name, a.after,
        jsonb_set(a.after, '{schedule,remainingRuns}', '0'::jsonb)
          || jsonb_build_object('status', 'completed', 'lastScheduledFor', to_char(m.last_scheduled_for AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      FROM moved m
      CROSS JOIN LATERAL (
        SELECT a.after FROM audit_log a WHERE a.target = m.name AND a.after IS NOT NULL AND a.action LIKE 'task.%' ORDER BY a.id DESC LIMIT 1
      ) a
      WHERE m.spent AND a.after ? 'schedule'`;
  }

  /** Records planning errors: the tasks stay active with their cursor where it was. */
  async recordPlanErrors(errors: PlanError[], db: Db): Promise<void> {
    if (errors.length === 0) return;
    await db.$executeRaw`
      UPDATE task t SET last_error = u.error, last_error_at = now()
      FROM unnest(${errors.map((e) => e.id)}::uuid[], ${errors.map((e) => e.error.slice(0, 2000))}::text[]) AS u(id, error)
      WHERE t.id = u.id`;
  }
}

/** Except a task whose planning failed a moment ago. */
const retryable = Prisma.sql`(last_error_at IS NULL OR last_error_at < now() - ${PLAN_ERROR_RETRY_MS} * interval '1 millisecond')`;

/** Active tasks whose cursor is at or before `horizon` (`task_next_run_active_idx`). */
const dueBy = (horizon: Date) =>
  Prisma.sql`status = 'active' AND next_run_at <= ${horizon.toISOString()}::timestamptz AND ${retryable}`;

/** Active one-offs due after `horizon`, by `oneOffHorizon` (`task_one_off_due_idx`). */
const oneOffDueBy = (horizon: Date, oneOffHorizon: Date) => Prisma.sql`
  status = 'active' AND schedule_kind = 'at' AND next_run_at > ${horizon.toISOString()}::timestamptz
  AND next_run_at <= ${oneOffHorizon.toISOString()}::timestamptz AND ${retryable}`;
