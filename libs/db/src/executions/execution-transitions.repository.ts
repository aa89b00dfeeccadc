import { Injectable } from '@nestjs/common';
import { type ExecutionTrigger, Prisma, type SkipReason, type TaskExecution } from '../generated/prisma/client.js';
import { PrismaService, type Db } from '../prisma.service.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import { type MovedExecution, PENDING, transition } from './execution-transition.js';
import { HistoryRoom } from '../history/history-room.js';
import { byId } from './by-id.js';
import { HANDLER_OF_ROW, PLANNED_STATUSES, plannedSql } from './predicates.js';

/** An execution row to insert: a planned slot, or an operator's trigger, backfill or resume. */
export interface NewExecution {
  id: string;
  taskId: string;
  taskName: string;
  scheduledFor: Date;
  fireAt: Date;
  trigger: ExecutionTrigger;
  /** `missed` rows are written terminal, with `finished_at`. */
  status: 'scheduled' | 'missed';
  taskVersion: number;
  exclusive: boolean;
  /** A catch-up run, or the first missed row of a pass: the first slot it stands for (see PlannedExecution). */
  coversFrom?: Date | null;
}

/** A planned execution whose slot an edit re-plans under the task's new definition. */
export interface ReplannedExecution {
  id: string;
  fireAt: Date;
  taskVersion: number;
  exclusive: boolean;
}

/** An execution of a task that has not started: what an edit or a pause decides about. */
export interface UnstartedExecution {
  id: string;
  scheduledFor: Date;
  fireAt: Date;
  trigger: ExecutionTrigger;
}

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

/**
 * The writes to `task_execution` of the planner, the API and the task lifecycle: recording planned
 * slots, an operator's actions on one execution, what an edit, pause or delete does to a task's
 * executions. Every state change is a fenced transition (see `transition`).
 */
@Injectable()
export class ExecutionTransitionsRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly room: HistoryRoom,
  ) {}

  /**
   * Inserts planned slots; a slot that already exists is left alone. Returns the rows inserted.
   * Throws NoRoomError when a slot has no partition yet or a planned one is below the live horizon
   * (see HistoryRoom.withRoom, around the caller's transaction).
   */
  async insertPlanned(rows: NewExecution[], db: Db): Promise<TaskExecution[]> {
    if (rows.length === 0) return [];
    await this.checkRoom(rows, db);
    const inserted = await db.$queryRaw<ExecutionRow[]>`${this.insertSql(rows)} RETURNING *`;
    return inserted.map(executionFromRow);
  }

  /**
   * A backfill of slots that were decided without running — `missed` (late, or in a catch-up's
   * favour) or `skipped`, never started — makes each one's row the backfill's run of it, due at its
   * `fireAt` and still its slot's only row; a slot that ran, runs or is planned is left alone.
   * `rows` are the backfill's planned rows of one task; returns the rows moved. In the transaction
   * of the backfill's {@link insertPlanned}, whose room check covers these slots.
   */
  async backfillDecided(rows: NewExecution[], db: Db): Promise<MovedExecution[]> {
    const [first] = rows;
    if (!first) return [];
    const slots = iso(rows.map((r) => r.scheduledFor));
    const found = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM task_execution
      WHERE task_id = ${first.taskId}::uuid AND scheduled_for = ANY(${slots}::timestamptz[])
        AND status IN ('missed', 'skipped') AND started_at IS NULL`;
    return transition(db, {
      ids: found.map((r) => r.id),
      from: ['missed', 'skipped'],
      to: 'scheduled',
      set: Prisma.sql`trigger = 'backfill', skip_reason = NULL, finished_at = NULL,
        task_version = ${first.taskVersion}, exclusive = ${first.exclusive},
        fire_at = (SELECT u.fire_at FROM unnest(${slots}::timestamptz[], ${iso(rows.map((r) => r.fireAt))}::timestamptz[])
                   AS u(slot, fire_at) WHERE u.slot = e.scheduled_for)`,
      guard: Prisma.sql`e.started_at IS NULL`,
      detail: { reason: 'backfill' },
    });
  }

  /**
   * Inserts a manual run, whose `payload` (when given) overrides the task's. Null when its slot
   * already exists.
   */
  async insertManualRun(row: NewExecution, payload: unknown, db: Db): Promise<TaskExecution | null> {
    await this.checkRoom([row], db);
    const [inserted] = await db.$queryRaw<ExecutionRow[]>`${this.insertSql([row], payload)} RETURNING *`;
    return inserted ? executionFromRow(inserted) : null;
  }

  /**
   * The planner's insert: like {@link insertPlanned} but answers only which ids were inserted — the
   * planner already holds every other column, and reading thousands of full rows back per batch
   * would cost more than writing them.
   */
  async insertPlannedIds(rows: NewExecution[], db: Db): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    await this.checkRoom(rows, db);
    const inserted = await db.$queryRaw<{ id: string }[]>`${this.insertSql(rows)} RETURNING id`;
    return new Set(inserted.map((r) => r.id));
  }

  private checkRoom(rows: NewExecution[], db: Db): Promise<void> {
    return this.room.check(
      db,
      rows.map((r) => r.scheduledFor),
      rows.filter((r) => r.status === 'scheduled').map((r) => r.scheduledFor),
    );
  }

  private insertSql(rows: NewExecution[], payload?: unknown): Prisma.Sql {
    const override = payload === undefined ? null : JSON.stringify(payload);
    return Prisma.sql`
      INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, trigger, status, task_version, exclusive, finished_at, payload, covers_from)
      SELECT u.id, u.task_id, u.task_name, u.scheduled_for, u.fire_at, u.trigger, u.status, u.task_version, u.exclusive,
             CASE WHEN u.status = 'missed' THEN now() END, ${override}::jsonb, u.covers_from
      FROM unnest(
        ${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.taskId)}::uuid[], ${rows.map((r) => r.taskName)}::text[],
        ${iso(rows.map((r) => r.scheduledFor))}::timestamptz[], ${iso(rows.map((r) => r.fireAt))}::timestamptz[],
        ${rows.map((r) => r.trigger)}::execution_trigger[], ${rows.map((r) => r.status)}::execution_status[],
        ${rows.map((r) => r.taskVersion)}::int[], ${rows.map((r) => r.exclusive)}::bool[],
        ${rows.map((r) => r.coversFrom?.toISOString() ?? null)}::timestamptz[]
      ) AS u(id, task_id, task_name, scheduled_for, fire_at, trigger, status, task_version, exclusive, covers_from)
      ON CONFLICT (task_id, scheduled_for) DO NOTHING`;
  }

  /**
   * Locks every unfinished execution of a task (pending, running, between attempts) for the rest of
   * the transaction: what an edit or a pause does next sees them as they are, and a worker's claim
   * of one either committed before (the edit sees it running and pins it) or finds it locked and
   * judges it again after the edit (see `ClaimsRepository`).
   */
  async lockUnfinished(taskId: string, db: Db): Promise<void> {
    await db.$queryRaw`
      SELECT id FROM live_execution WHERE id IN (
        SELECT id FROM live_execution WHERE task_id = ${taskId}::uuid AND status IN ${Prisma.raw(PLANNED_STATUSES)}
        UNION ALL SELECT id FROM live_execution WHERE task_id = ${taskId}::uuid AND status = 'running'
        UNION ALL SELECT id FROM live_execution WHERE task_id = ${taskId}::uuid AND status = 'retrying'
      ) ORDER BY id FOR UPDATE`;
  }

  /** A task's executions that have not started (`scheduled` or `queued`), oldest slot first; rows locked. */
  unstartedOfTask(taskId: string, db: Db): Promise<UnstartedExecution[]> {
    return db.$queryRaw<UnstartedExecution[]>`
      SELECT id, scheduled_for AS "scheduledFor", fire_at AS "fireAt", trigger FROM live_execution
      WHERE task_id = ${taskId}::uuid AND status IN ${Prisma.raw(PLANNED_STATUSES)}
      ORDER BY scheduled_for FOR UPDATE`;
  }

  /**
   * Withdraws planned executions whose slot has not come and no longer exists (an edit moved it, a
   * pause stopped it): they were never due, so they leave no row behind — and a later plan of the
   * same slot (the edit undone, the task resumed) records it again. Only rows that have not started.
   */
  async withdraw(ids: string[], db: Db): Promise<number> {
    if (ids.length === 0) return 0;
    return db.$executeRaw`DELETE FROM live_execution WHERE id = ANY(${ids}::uuid[]) AND status IN ${Prisma.raw(PLANNED_STATUSES)}`;
  }

  /**
   * Puts planned executions under the task's new definition: its version, its jitter, its overlap
   * policy. A slot that no longer runs alone (`overlap: allow`) stops waiting for its task's turn:
   * its park and its buffer mark go in the same statement, and the relay gives it its job — else no
   * hand-over would ever reach it (the hand-over serves exclusive slots only) and it would wait for ever.
   */
  async replan(rows: ReplannedExecution[], db: Db): Promise<void> {
    if (rows.length === 0) return;
    await db.$executeRaw`
      UPDATE live_execution e SET fire_at = u.fire_at, task_version = u.task_version, exclusive = u.exclusive,
        parked_at = CASE WHEN u.exclusive THEN e.parked_at END, next_attempt_at = CASE WHEN u.exclusive THEN e.next_attempt_at END
      FROM unnest(${rows.map((r) => r.id)}::uuid[], ${iso(rows.map((r) => r.fireAt))}::timestamptz[], ${rows.map((r) => r.taskVersion)}::int[], ${rows.map((r) => r.exclusive)}::bool[])
        AS u(id, fire_at, task_version, exclusive)
      WHERE e.id = u.id AND ${Prisma.raw(plannedSql('e'))}`;
  }

  /**
   * Executions of a task in progress (`running`, `retrying`) keep the definition they started with
   * when the task is edited: it is copied onto them, once (a second edit keeps the first copy).
   */
  async pinInProgress(taskId: string, definition: Prisma.InputJsonValue, db: Db): Promise<number> {
    return db.$executeRaw`
      UPDATE live_execution SET pinned_definition = ${JSON.stringify(definition)}::jsonb
      WHERE task_id = ${taskId}::uuid AND status IN ('running', 'retrying') AND pinned_definition IS NULL`;
  }

  /** Ends executions that have not started as `skipped` with a reason. Returns how many moved. */
  async skipUnstarted(ids: string[], reason: SkipReason, db: Db): Promise<number> {
    const moved = await transition(db, {
      ids,
      from: ['scheduled', 'queued'],
      to: 'skipped',
      set: Prisma.sql`skip_reason = ${reason}::skip_reason, finished_at = now()`,
      detail: { reason },
    });
    return moved.length;
  }

  /**
   * Cancels every unfinished execution of a task — pending and running alike (delete, pause with
   * cancel). Returns how many it cancelled and the ones that were running: their workers must be told to abort.
   */
  async cancelOfTask(taskId: string, reason: string, db: Db): Promise<{ cancelled: number; running: TaskExecution[] }> {
    const ids = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM live_execution WHERE task_id = ${taskId}::uuid AND status IN ('scheduled', 'queued', 'retrying', 'running')`;
    const moved = await transition(db, {
      ids: ids.map((r) => r.id),
      from: [...PENDING, 'running'],
      to: 'cancelled',
      set: Prisma.sql`finished_at = now(), lease_until = NULL`,
      detail: { reason },
      keepPermit: true,
    });
    return { cancelled: moved.length, running: moved.filter((e) => e.fromStatus === 'running') };
  }

  /**
   * Cancels one execution: a pending one, or a running one (its worker is told separately and its
   * late writes are fenced out). Returns the row as it was cancelled (with the state it left: a
   * running one's worker must be told), or null if it was not cancellable. `by`: the key that asked (its event says so).
   */
  async cancel(id: string, reason: string, db: Db = this.prisma, by?: string): Promise<MovedExecution | null> {
    const moved = await transition(db, {
      ids: [id],
      from: [...PENDING, 'running'],
      to: 'cancelled',
      set: Prisma.sql`finished_at = now(), lease_until = NULL`,
      detail: by === undefined ? { reason } : { reason, by },
      keepPermit: true,
    });
    return moved[0] ?? null;
  }

  /**
   * Replays a dead execution: `retrying`, due now. Null when it is not dead. A dead letter older than
   * the live horizon makes room first: it is live again.
   */
  async retryDead(id: string): Promise<(TaskExecution & { handler: string | null }) | null> {
    const [found] = await this.prisma.$queryRaw<{ slot: Date }[]>`
      SELECT scheduled_for AS slot FROM task_execution e WHERE ${byId('e', id)} AND status = 'dead'`;
    if (!found) return null;
    const moved = await this.room.withRoom(() =>
      this.prisma.$transaction(async (tx) => {
        await this.room.check(tx, [found.slot]);
        return transition(tx, {
          ids: [id],
          from: ['dead'],
          to: 'retrying',
          set: Prisma.sql`finished_at = NULL, next_attempt_at = now()`,
          detail: { reason: 'replayed' },
        });
      }),
    );
    if (!moved[0]) return null;
    // The handler the replay runs (its pinned definition's, else its task's): its job goes to that handler's queue.
    const [row] = await this.prisma.$queryRaw<
      { handler: string | null }[]
    >`SELECT ${Prisma.raw(HANDLER_OF_ROW('e'))} AS handler FROM task_execution e WHERE ${byId('e', id)}`;
    return { ...moved[0], handler: row?.handler ?? null };
  }
}
