import { Injectable } from '@nestjs/common';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import {
  type ExecutionStatus,
  type ExecutionTrigger,
  Prisma,
  type SkipReason,
  type TaskExecution,
} from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** A slot the planner wants recorded. */
export interface PlannedExecution {
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
}

export interface ExecutionFilter {
  taskName?: string;
  status?: ExecutionStatus;
  from?: Date;
  to?: Date;
}

export type ClaimResult = { kind: 'claimed'; execution: TaskExecution } | { kind: 'overlap' } | { kind: 'lost' };

const PENDING: ExecutionStatus[] = ['scheduled', 'queued', 'retrying'];
const UNIQUE_VIOLATION = '23505';

// A worker's claims and batched successes go to the pool directly: they run thousands of times a
// second under load, where the client's per-statement work costs more than the statement itself.
const CLAIM = `
  WITH req AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS r(id, attempt_id, worker_id)),
  prev AS (SELECT e.id, e.status FROM task_execution e WHERE e.id IN (SELECT id FROM req) ORDER BY e.id FOR UPDATE),
  picked AS (SELECT DISTINCT ON (id) * FROM req ORDER BY id),
  moved AS (
    UPDATE task_execution e
    SET status = 'running', attempt = e.attempt + 1, attempt_id = picked.attempt_id, worker_id = picked.worker_id,
        started_at = now(), heartbeat_at = now(), lease_until = now() + $4 * interval '1 millisecond', next_attempt_at = NULL
    FROM prev JOIN picked USING (id)
    WHERE e.id = prev.id AND (prev.status = ANY($5::execution_status[]) OR (prev.status = 'running' AND e.lease_until < now()))
    RETURNING e.*, prev.status AS from_status
  ),
  ev AS (
    INSERT INTO execution_event (execution_id, from_status, to_status, worker_id, detail)
    SELECT id, from_status, status, worker_id, jsonb_build_object('attempt', attempt) FROM moved
  )
  SELECT * FROM moved`;

const MARK_SUCCEEDED_MANY = `
  WITH req AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[]) AS r(id, attempt_id, result)),
  prev AS (SELECT e.id, e.status FROM task_execution e WHERE e.id IN (SELECT id FROM req) ORDER BY e.id FOR UPDATE),
  moved AS (
    UPDATE task_execution e
    SET status = 'succeeded', finished_at = now(), lease_until = NULL, error = NULL, result = req.result
    FROM prev JOIN req USING (id)
    WHERE e.id = prev.id AND prev.status = 'running' AND e.attempt_id = req.attempt_id
    RETURNING e.id, e.attempt_id, e.status, e.worker_id, prev.status AS from_status
  ),
  ev AS (
    INSERT INTO execution_event (execution_id, from_status, to_status, worker_id, detail)
    SELECT id, from_status, status, worker_id, NULL FROM moved
  )
  SELECT attempt_id FROM moved`;

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());
const statusList = (statuses: ExecutionStatus[]) => Prisma.sql`ARRAY[${Prisma.join(statuses)}]::execution_status[]`;

/**
 * Owns `task_execution` and `execution_event`. Every state change is one fenced statement: the
 * expected state (and, for a worker, its `attempt_id`) is in the `WHERE`, so a stale writer
 * changes nothing; each change appends its event in the same statement.
 */
@Injectable()
export class ExecutionsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Inserts planned slots; a slot that already exists is left alone. Returns the rows inserted.
   * `payload` overrides the task's payload for these rows (manual runs).
   */
  async insertPlanned(db: Db, rows: PlannedExecution[], payload?: unknown): Promise<TaskExecution[]> {
    if (rows.length === 0) return [];
    const inserted = await db.$queryRaw<ExecutionRow[]>`${this.insertSql(rows, payload)} RETURNING *`;
    return inserted.map(executionFromRow);
  }

  /**
   * The planner's insert: like {@link insertPlanned} but answers only which ids were inserted — the
   * planner already holds every other column, and reading thousands of full rows back per batch
   * would cost more than writing them.
   */
  async insertPlannedIds(db: Db, rows: PlannedExecution[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const inserted = await db.$queryRaw<{ id: string }[]>`${this.insertSql(rows)} RETURNING id`;
    return new Set(inserted.map((r) => r.id));
  }

  private insertSql(rows: PlannedExecution[], payload?: unknown): Prisma.Sql {
    const override = payload === undefined ? null : JSON.stringify(payload);
    return Prisma.sql`
      INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, trigger, status, task_version, exclusive, finished_at, payload)
      SELECT u.id, u.task_id, u.task_name, u.scheduled_for, u.fire_at, u.trigger, u.status, u.task_version, u.exclusive,
             CASE WHEN u.status = 'missed' THEN now() END, ${override}::jsonb
      FROM unnest(
        ${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.taskId)}::uuid[], ${rows.map((r) => r.taskName)}::text[],
        ${iso(rows.map((r) => r.scheduledFor))}::timestamptz[], ${iso(rows.map((r) => r.fireAt))}::timestamptz[],
        ${rows.map((r) => r.trigger)}::execution_trigger[], ${rows.map((r) => r.status)}::execution_status[],
        ${rows.map((r) => r.taskVersion)}::int[], ${rows.map((r) => r.exclusive)}::bool[]
      ) AS u(id, task_id, task_name, scheduled_for, fire_at, trigger, status, task_version, exclusive)
      ON CONFLICT (task_id, scheduled_for) DO NOTHING`;
  }

  /** `scheduled` → `queued` for the rows just pushed to the queue. Returns the ids moved. */
  async markQueued(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const moved = await this.transition(this.prisma, ids, ['scheduled'], 'queued', Prisma.sql`queued_at = now()`);
    return moved.map((e) => e.id);
  }

  /**
   * Claims an execution for one attempt: `running`, a fresh `attempt_id` and a lease — only from a
   * pending state or from `running` whose lease has expired. `lost` when someone else owns it or it
   * is finished; `overlap` when the task already has an exclusive run in progress.
   */
  async claim(id: string, attemptId: string, workerId: string, leaseMs: number): Promise<ClaimResult> {
    try {
      return (await this.claimMany([{ id, attemptId, workerId }], leaseMs))[0]!;
    } catch (error) {
      if (isUniqueViolation(error)) return { kind: 'overlap' };
      throw error;
    }
  }

  /**
   * {@link claim} for many executions in one statement (a worker's concurrent jobs). Rows are locked
   * in id order, as every multi-row transition does. The statement fails as a whole when one of
   * them would break the overlap guard, or when it is chosen as a deadlock victim (two workers'
   * batches can wait on each other through the overlap guard's index): the caller then claims
   * each on its own with {@link claim}.
   */
  async claimMany(requests: { id: string; attemptId: string; workerId: string }[], leaseMs: number): Promise<ClaimResult[]> {
    const { rows } = await this.prisma.pool.query<ExecutionRow>(CLAIM, [
      requests.map((r) => r.id),
      requests.map((r) => r.attemptId),
      requests.map((r) => r.workerId),
      leaseMs,
      PENDING,
    ]);
    const byAttempt = new Map(rows.map((row) => [row.attempt_id, executionFromRow(row)]));
    return requests.map((r): ClaimResult => {
      const execution = byAttempt.get(r.attemptId);
      return execution ? { kind: 'claimed', execution } : { kind: 'lost' };
    });
  }

  /**
   * {@link markSucceeded} for many attempts in one statement; true for each attempt that was
   * current. Throws if the statement fails (the caller may then record each on its own).
   */
  async markSucceededMany(successes: { id: string; attemptId: string; result: Prisma.InputJsonValue | null }[]): Promise<boolean[]> {
    const { rows } = await this.prisma.pool.query<{ attempt_id: string }>(MARK_SUCCEEDED_MANY, [
      successes.map((s) => s.id),
      successes.map((s) => s.attemptId),
      successes.map((s) => (s.result === null ? null : JSON.stringify(s.result))),
    ]);
    const current = new Set(rows.map((m) => m.attempt_id));
    return successes.map((s) => current.has(s.attemptId));
  }

  /** `running` → `succeeded`, fenced by `attempt_id`. False when the attempt is stale. */
  async markSucceeded(id: string, attemptId: string, result: Prisma.InputJsonValue | null, db: Db = this.prisma): Promise<boolean> {
    const moved = await this.transition(
      db,
      [id],
      ['running'],
      'succeeded',
      Prisma.sql`finished_at = now(), lease_until = NULL, error = NULL, result = ${result === null ? null : JSON.stringify(result)}::jsonb`,
      Prisma.sql`e.attempt_id = ${attemptId}::uuid`,
    );
    return moved.length === 1;
  }

  /**
   * A failed attempt: `retrying` until `nextAttemptAt`, or `dead` when `nextAttemptAt` is null.
   * Fenced by `attempt_id`; false when the attempt is stale.
   */
  async markFailed(id: string, attemptId: string, error: string, nextAttemptAt: Date | null, db: Db = this.prisma): Promise<boolean> {
    const to: ExecutionStatus = nextAttemptAt ? 'retrying' : 'dead';
    const set = nextAttemptAt
      ? Prisma.sql`error = ${error}, lease_until = NULL, next_attempt_at = ${nextAttemptAt.toISOString()}::timestamptz`
      : Prisma.sql`error = ${error}, lease_until = NULL, finished_at = now()`;
    const moved = await this.transition(db, [id], ['running'], to, set, Prisma.sql`e.attempt_id = ${attemptId}::uuid`, { error });
    return moved.length === 1;
  }

  /** Ends an execution as `skipped` with a reason, from a pending state or from the caller's own attempt. */
  async markSkipped(id: string, reason: SkipReason, attemptId: string | null): Promise<boolean> {
    const from: ExecutionStatus[] = attemptId ? ['running'] : PENDING;
    const fence = attemptId ? Prisma.sql`e.attempt_id = ${attemptId}::uuid` : Prisma.sql`TRUE`;
    const moved = await this.transition(
      this.prisma,
      [id],
      from,
      'skipped',
      Prisma.sql`skip_reason = ${reason}::skip_reason, finished_at = now(), lease_until = NULL`,
      fence,
      { reason },
    );
    return moved.length === 1;
  }

  /**
   * Ends every not-yet-started execution of a task: `cancelled` (also from `retrying`) or
   * `skipped` with `reason`. Returns how many moved.
   */
  async endPendingOfTask(db: Db, taskId: string, to: 'cancelled' | 'skipped', reason: SkipReason): Promise<number> {
    const from: ExecutionStatus[] = to === 'cancelled' ? PENDING : ['scheduled', 'queued'];
    const ids = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM task_execution WHERE task_id = ${taskId}::uuid AND status = ANY(${statusList(from)})`;
    const set =
      to === 'skipped' ? Prisma.sql`skip_reason = ${reason}::skip_reason, finished_at = now()` : Prisma.sql`finished_at = now()`;
    const moved = await this.transition(db, ids.map((r) => r.id), from, to, set, Prisma.sql`TRUE`, { reason });
    return moved.length;
  }

  /** Extends a running attempt's lease. False when the attempt no longer owns the execution. */
  async renewLease(id: string, attemptId: string, leaseMs: number): Promise<boolean> {
    const changed = await this.prisma.$executeRaw`
      UPDATE task_execution SET lease_until = now() + ${leaseMs} * interval '1 millisecond', heartbeat_at = now()
      WHERE id = ${id}::uuid AND attempt_id = ${attemptId}::uuid AND status = 'running'`;
    return changed === 1;
  }

  /**
   * Gives a running attempt back without counting it as a failure (the worker is shutting down):
   * `retrying`, due at once, for another worker to pick up.
   */
  async releaseAttempt(id: string, attemptId: string, reason: string): Promise<boolean> {
    const moved = await this.transition(
      this.prisma,
      [id],
      ['running'],
      'retrying',
      Prisma.sql`lease_until = NULL, next_attempt_at = now(), error = ${reason}`,
      Prisma.sql`e.attempt_id = ${attemptId}::uuid`,
      { reason },
    );
    return moved.length === 1;
  }

  /**
   * Cancels one execution: a pending one, or a running one (its worker is told separately and its
   * late writes are fenced out). Returns the row as it was cancelled, or null if it was not cancellable.
   */
  async cancel(id: string, reason: string, db: Db = this.prisma): Promise<TaskExecution | null> {
    const moved = await this.transition(db, [id], [...PENDING, 'running'], 'cancelled', Prisma.sql`finished_at = now(), lease_until = NULL`, Prisma.sql`TRUE`, {
      reason,
    });
    return moved[0] ?? null;
  }

  /** Replays a dead execution: `retrying`, due now. Null when it is not dead. */
  async retryDead(id: string): Promise<TaskExecution | null> {
    const moved = await this.transition(this.prisma, [id], ['dead'], 'retrying', Prisma.sql`finished_at = NULL, next_attempt_at = now()`, Prisma.sql`TRUE`, {
      reason: 'replayed',
    });
    return moved[0] ?? null;
  }

  /** The exclusive execution of a task that is running now, if any. */
  findRunningExclusive(taskId: string): Promise<TaskExecution | null> {
    return this.prisma.taskExecution.findFirst({ where: { taskId, status: 'running', exclusive: true } });
  }

  /**
   * Marks a queued execution as the one that waits for the task's running execution
   * (`overlap=buffer_one`). The task row lock makes "at most one waiting" hold under races. False
   * when another execution of the task already waits.
   */
  async holdAsBuffered(id: string, taskId: string): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM task WHERE id = ${taskId}::uuid FOR UPDATE`;
      const changed = await tx.$executeRaw`
        UPDATE task_execution SET next_attempt_at = COALESCE(next_attempt_at, now())
        WHERE id = ${id}::uuid AND status IN ('scheduled', 'queued')
          AND NOT EXISTS (
            SELECT 1 FROM task_execution o
            WHERE o.task_id = ${taskId}::uuid AND o.id <> ${id}::uuid AND o.status IN ('scheduled', 'queued') AND o.next_attempt_at IS NOT NULL
          )`;
      return changed === 1;
    });
  }

  /**
   * After a change to a task that does not affect its slots (policy, payload, description), its
   * pending executions adopt the new version instead of being skipped as stale.
   */
  async adoptTaskVersion(db: Db, taskId: string, version: number): Promise<void> {
    await db.$executeRaw`
      UPDATE task_execution SET task_version = ${version}
      WHERE task_id = ${taskId}::uuid AND status IN ('scheduled', 'queued', 'retrying')`;
  }

  /** Rows planned but not yet fired, due by `before`: a (new) leader's timer takes them. */
  async listScheduledDue(before: Date, limit: number): Promise<TaskExecution[]> {
    return this.prisma.taskExecution.findMany({
      where: { status: 'scheduled', fireAt: { lte: before } },
      orderBy: { fireAt: 'asc' },
      take: limit,
    });
  }

  /**
   * Executions waiting on a queue job since before `before`: `queued` ones (first attempt) and
   * `retrying` ones whose next attempt is due. The relay checks that their job still exists.
   */
  async listAwaitingJob(before: Date, limit: number): Promise<Pick<TaskExecution, 'id' | 'status' | 'attempt'>[]> {
    return this.prisma.taskExecution.findMany({
      where: {
        OR: [
          { status: 'queued', queuedAt: { lt: before } },
          { status: 'retrying', nextAttemptAt: { lt: before } },
        ],
      },
      select: { id: true, status: true, attempt: true },
      orderBy: { fireAt: 'asc' },
      take: limit,
    });
  }

  /**
   * Reaps `running` executions whose lease expired (their worker died or hung): `retrying` at once
   * when attempts remain, else `dead`. Fenced: a worker that renews its lease meanwhile keeps it.
   */
  async reapExpiredLeases(limit: number): Promise<Pick<TaskExecution, 'id' | 'status' | 'attempt'>[]> {
    return this.prisma.$queryRaw<Pick<TaskExecution, 'id' | 'status' | 'attempt'>[]>`
      WITH expired AS (
        SELECT e.id, e.attempt_id, e.attempt < COALESCE(t.max_attempts, 0) AS retry
        FROM task_execution e LEFT JOIN task t ON t.id = e.task_id
        WHERE e.status = 'running' AND e.lease_until < now()
        ORDER BY e.lease_until
        LIMIT ${limit}
        FOR UPDATE OF e SKIP LOCKED
      ),
      moved AS (
        UPDATE task_execution e SET
          status = CASE WHEN x.retry THEN 'retrying'::execution_status ELSE 'dead'::execution_status END,
          next_attempt_at = CASE WHEN x.retry THEN now() END,
          finished_at = CASE WHEN x.retry THEN NULL ELSE now() END,
          lease_until = NULL,
          error = 'lease expired: the worker stopped renewing it'
        FROM expired x
        WHERE e.id = x.id AND e.status = 'running' AND e.attempt_id = x.attempt_id
        RETURNING e.id, e.status, e.attempt, e.worker_id
      ),
      ev AS (
        INSERT INTO execution_event (execution_id, from_status, to_status, worker_id, detail)
        SELECT id, 'running', status, worker_id, '{"reason":"lease_expired"}'::jsonb FROM moved
      )
      SELECT id, status, attempt FROM moved`;
  }

  async findById(id: string) {
    return this.prisma.taskExecution.findUnique({ where: { id }, include: { events: { orderBy: { id: 'asc' } } } });
  }

  /** Executions newest first, keyset-paginated on (scheduled_for, id) so inserts never shift a page. */
  async list(filter: ExecutionFilter, limit: number, after?: { scheduledFor: Date; id: string }) {
    return this.prisma.taskExecution.findMany({
      where: {
        taskName: filter.taskName,
        status: filter.status,
        scheduledFor: { gte: filter.from, lt: filter.to },
        ...(after && {
          OR: [{ scheduledFor: { lt: after.scheduledFor } }, { scheduledFor: after.scheduledFor, id: { lt: after.id } }],
        }),
      },
      orderBy: [{ scheduledFor: 'desc' }, { id: 'desc' }],
      take: limit,
    });
  }

  async lastOfTask(taskId: string) {
    return this.prisma.taskExecution.findFirst({ where: { taskId }, orderBy: { scheduledFor: 'desc' } });
  }

  private async transition(
    db: Db,
    ids: string[],
    from: ExecutionStatus[],
    to: ExecutionStatus,
    set: Prisma.Sql,
    fence: Prisma.Sql = Prisma.sql`TRUE`,
    detail: Record<string, unknown> | null = null,
  ): Promise<TaskExecution[]> {
    if (ids.length === 0) return [];
    const rows = await db.$queryRaw<ExecutionRow[]>`
      WITH prev AS (SELECT id, status FROM task_execution WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE),
      moved AS (
        UPDATE task_execution e SET status = ${to}::execution_status, ${set}
        FROM prev
        WHERE e.id = prev.id AND prev.status = ANY(${statusList(from)}) AND ${fence}
        RETURNING e.*, prev.status AS from_status
      ),
      ev AS (
        INSERT INTO execution_event (execution_id, from_status, to_status, worker_id, detail)
        SELECT id, from_status, status, worker_id, ${detail === null ? null : JSON.stringify(detail)}::jsonb FROM moved
      )
      SELECT * FROM moved`;
    return rows.map(executionFromRow);
  }
}

function isUniqueViolation(error: unknown): boolean {
  const text = `${(error as { code?: string })?.code ?? ''} ${(error as Error)?.message ?? ''}`;
  return text.includes(UNIQUE_VIOLATION) || text.includes('P2002') || /unique constraint/i.test(text);
}
