import { Injectable } from '@nestjs/common';
import type { ExecutionStatus, ExecutionTrigger, Prisma, SkipReason } from './generated/prisma/client.js';
import { PrismaService } from './prisma.service.js';

/** A task's audit entry as the timeline reads it: a change of its definition or state. */
export interface TaskChange {
  id: bigint;
  actor: string;
  action: string;
  at: Date;
  /** The task's definition after the change (the audit log's `after`), null after a delete. */
  after: Prisma.JsonValue | null;
}

/** An execution as the timeline reads it: what decides a slot's outcome and explains it. */
export interface SlotRow {
  id: string;
  taskId: string | null;
  scheduledFor: Date;
  fireAt: Date;
  trigger: ExecutionTrigger;
  status: ExecutionStatus;
  skipReason: SkipReason | null;
  attempt: number;
  taskVersion: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  nextAttemptAt: Date | null;
  error: string | null;
  concurrencyKey: string | null;
  rateKey: string | null;
  quotaNamespace: string | null;
  heldAt: Date | null;
  flowWaitedMs: number | null;
  parkedAt: Date | null;
  /** A catch-up run: the first slot it stands in for (null: no catch-up, or one written before it was recorded). */
  coversFrom: Date | null;
  createdAt: Date;
}

/** A calendar's change as the audit log keeps it: its content before and after (null: none). */
export interface CalendarChange {
  name: string;
  at: Date;
  before: Prisma.JsonValue | null;
  after: Prisma.JsonValue | null;
}

/** An event that explains a slot: a failed attempt's error, who cancelled it. */
export interface SlotEvent {
  executionId: string;
  toStatus: ExecutionStatus;
  at: Date;
  detail: Prisma.JsonValue | null;
}

const ROW_COLUMNS = `id, task_id AS "taskId", scheduled_for AS "scheduledFor", fire_at AS "fireAt", trigger, status, skip_reason AS "skipReason",
  attempt, task_version AS "taskVersion", started_at AS "startedAt", finished_at AS "finishedAt", next_attempt_at AS "nextAttemptAt", error,
  concurrency_key AS "concurrencyKey", rate_key AS "rateKey", quota_namespace AS "quotaNamespace", held_at AS "heldAt", flow_waited_ms AS "flowWaitedMs", parked_at AS "parkedAt",
  covers_from AS "coversFrom", created_at AS "createdAt"`;

/**
 * The reads of a task's timeline (DESIGN §7): its changes from the audit log, its executions in a
 * range — under its name, a deleted task's too — and what explains them. Each read is a range of
 * an index: `(task_id, scheduled_for)`, `task_execution_orphan_idx`, `audit_log_target_id_idx`.
 */
@Injectable()
export class TimelineRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Every change of the tasks named `name` (created, edited, paused, resumed, deleted), oldest first. */
  changesOf(name: string): Promise<TaskChange[]> {
    return this.prisma.$queryRaw<TaskChange[]>`
      SELECT id, actor, action, at, after FROM audit_log
      WHERE target = ${name} AND action IN ('task.create', 'task.update', 'task.replace', 'task.pause', 'task.resume', 'task.delete', 'task.rollback', 'task.restore', 'task.complete')
      ORDER BY id`;
  }

  /**
   * The changes of the calendars named (`calendar.put`, `calendar.delete`), oldest first: what each
   * held from each change on (`after`; null once deleted) and before its first (`before`).
   */
  calendarChangesOf(names: readonly string[]): Promise<CalendarChange[]> {
    if (names.length === 0) return Promise.resolve([]);
    return this.prisma.$queryRaw<CalendarChange[]>`
      SELECT target AS name, at, before, after FROM audit_log
      WHERE target = ANY(${[...names]}::text[]) AND action IN ('calendar.put', 'calendar.delete')
      ORDER BY id`;
  }

  /**
   * The executions under `name` with a slot in `(after, until]`, oldest first, at most `limit`:
   * those of the task that has the name now (`taskId`) and those deleted tasks of the name left.
   */
  async rowsOf(name: string, taskId: string | null, after: Date, until: Date, limit: number): Promise<SlotRow[]> {
    const range = (extra: string) => `
      (SELECT ${ROW_COLUMNS} FROM task_execution WHERE ${extra} AND scheduled_for > $2::timestamptz AND scheduled_for <= $3::timestamptz
       ORDER BY scheduled_for LIMIT $4::int)`;
    return this.prisma.$queryRawUnsafe<SlotRow[]>(
      `SELECT * FROM (${range('task_id = $5::uuid')} UNION ALL ${range('task_id IS NULL AND task_name = $1')}) r ORDER BY "scheduledFor", "createdAt" LIMIT $4::int`,
      name,
      after,
      until,
      limit,
      taskId,
    );
  }

  /** The latest execution under `name` that started, with a slot at or before `at`: what a skip for overlap overlapped. */
  async lastStartedAtOrBefore(name: string, taskId: string | null, at: Date): Promise<SlotRow | null> {
    const rows = await this.prisma.$queryRawUnsafe<SlotRow[]>(
      `SELECT * FROM (
         (SELECT ${ROW_COLUMNS} FROM task_execution WHERE task_id = $3::uuid AND scheduled_for <= $2::timestamptz AND started_at IS NOT NULL ORDER BY scheduled_for DESC LIMIT 1)
         UNION ALL
         (SELECT ${ROW_COLUMNS} FROM task_execution WHERE task_id IS NULL AND task_name = $1 AND scheduled_for <= $2::timestamptz AND started_at IS NOT NULL ORDER BY scheduled_for DESC LIMIT 1)
       ) r ORDER BY "scheduledFor" DESC LIMIT 1`,
      name,
      at,
      taskId,
    );
    return rows[0] ?? null;
  }

  /** The first catch-up run under `name` with a slot at or after `at` and at most `until`: what superseded the slots missed before it. */
  async firstCatchUpFrom(name: string, taskId: string | null, at: Date, until: Date): Promise<SlotRow | null> {
    const rows = await this.prisma.$queryRawUnsafe<SlotRow[]>(
      `SELECT * FROM (
         (SELECT ${ROW_COLUMNS} FROM task_execution WHERE task_id = $4::uuid
            AND scheduled_for >= $2::timestamptz AND scheduled_for <= $3::timestamptz AND trigger = 'catchup'
          ORDER BY scheduled_for LIMIT 1)
         UNION ALL
         (SELECT ${ROW_COLUMNS} FROM task_execution WHERE task_id IS NULL AND task_name = $1
            AND scheduled_for >= $2::timestamptz AND scheduled_for <= $3::timestamptz AND trigger = 'catchup'
          ORDER BY scheduled_for LIMIT 1)
       ) r ORDER BY "scheduledFor" LIMIT 1`,
      name,
      at,
      until,
      taskId,
    );
    return rows[0] ?? null;
  }

  /** The events that explain these executions: failed attempts (their errors) and cancels (by whom), oldest first. */
  eventsOf(ids: string[]): Promise<SlotEvent[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.prisma.$queryRaw<SlotEvent[]>`
      SELECT execution_id AS "executionId", to_status AS "toStatus", at, detail FROM execution_event
      WHERE execution_id = ANY(${ids}::uuid[]) AND to_status IN ('retrying', 'dead', 'cancelled', 'skipped', 'missed')
      ORDER BY execution_id, at, id`;
  }
}
