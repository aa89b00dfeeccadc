import { Injectable } from '@nestjs/common';
import { type ExecutionStatus, Prisma, type SkipReason } from '../generated/prisma/client.js';
import { PrismaService, type Db } from '../prisma.service.js';
import { EVENT_CTE_TEXT, PENDING, transition } from './execution-transition.js';

const MARK_SUCCEEDED_MANY = `
  WITH req AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[]) AS r(id, attempt_id, result)),
  prev AS (SELECT e.id, e.status FROM task_execution e WHERE e.id = ANY($1::uuid[]) ORDER BY e.id FOR UPDATE),
  moved AS (
    UPDATE task_execution e
    SET status = 'succeeded', finished_at = now(), lease_until = NULL, error = NULL, result = req.result
    FROM prev JOIN req USING (id)
    WHERE e.id = ANY($1::uuid[]) AND e.id = prev.id AND prev.status = 'running' AND e.attempt_id = req.attempt_id
    RETURNING e.id, e.attempt_id, e.status, e.attempt, e.worker_id, prev.status AS from_status
  ),
  ${EVENT_CTE_TEXT()}
  SELECT attempt_id FROM moved`;


/**
 * A worker's side of `task_execution`: claiming an attempt, holding its lease, recording its
 * outcome. Every write is fenced by the attempt's `attempt_id`: a stale attempt changes nothing.
 */
@Injectable()
export class AttemptsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * {@link markSucceeded} for many attempts in one statement; true for each attempt that was
   * current. Throws if the statement fails (the caller may then record each on its own).
   */
  async markSucceededMany(successes: { id: string; attemptId: string; result: Prisma.InputJsonValue | null }[]): Promise<boolean[]> {
    const { rows } = await this.prisma.pool.query<{ attempt_id: string }>({ name: 'punctual.succeeded.many', text: MARK_SUCCEEDED_MANY, values: [
      successes.map((s) => s.id),
      successes.map((s) => s.attemptId),
      successes.map((s) => (s.result === null ? null : JSON.stringify(s.result))),
    ] });
    const current = new Set(rows.map((m) => m.attempt_id));
    return successes.map((s) => current.has(s.attemptId));
  }

  /** `running` → `succeeded`, fenced by `attempt_id`. False when the attempt is stale. */
  async markSucceeded(id: string, attemptId: string, result: Prisma.InputJsonValue | null, db: Db = this.prisma): Promise<boolean> {
    const moved = await transition(db, {
      ids: [id],
      from: ['running'],
      to: 'succeeded',
      set: Prisma.sql`finished_at = now(), lease_until = NULL, error = NULL, result = ${result === null ? null : JSON.stringify(result)}::jsonb`,
      guard: Prisma.sql`e.attempt_id = ${attemptId}::uuid`,
    });
    return moved.length === 1;
  }

  /**
   * A failed attempt: `retrying` until `nextAttemptAt`, or `dead` when `nextAttemptAt` is null.
   * Fenced by `attempt_id`; false when the attempt is stale.
   */
  async markFailed(id: string, attemptId: string, error: string, nextAttemptAt: Date | null, db: Db = this.prisma): Promise<boolean> {
    const moved = await transition(db, {
      ids: [id],
      from: ['running'],
      to: nextAttemptAt ? 'retrying' : 'dead',
      set: nextAttemptAt
        ? Prisma.sql`error = ${error}, lease_until = NULL, next_attempt_at = ${nextAttemptAt.toISOString()}::timestamptz`
        : Prisma.sql`error = ${error}, lease_until = NULL, finished_at = now()`,
      guard: Prisma.sql`e.attempt_id = ${attemptId}::uuid`,
      detail: { error },
    });
    return moved.length === 1;
  }

  /**
   * Extends the leases of running attempts in one statement, each fenced by its `attempt_id`.
   * Returns the attempt ids that still own their execution (the others were cancelled, or taken
   * over after their lease ran out).
   */
  async renewLeases(attempts: { id: string; attemptId: string }[], leaseMs: number): Promise<Set<string>> {
    if (attempts.length === 0) return new Set();
    const { rows } = await this.prisma.pool.query<{ attempt_id: string }>(
      `UPDATE task_execution e SET lease_until = now() + $3 * interval '1 millisecond', heartbeat_at = now()
       FROM unnest($1::uuid[], $2::uuid[]) AS a(id, attempt_id)
       WHERE e.id = a.id AND e.attempt_id = a.attempt_id AND e.status = 'running'
       RETURNING e.attempt_id`,
      [attempts.map((a) => a.id), attempts.map((a) => a.attemptId), leaseMs],
    );
    return new Set(rows.map((r) => r.attempt_id));
  }

  /**
   * Of these running attempts, the ones that no longer own their execution, with what it is now
   * (`cancelled`, or the state another attempt left it in): one read for all of a worker's attempts.
   */
  async notOwned(attempts: { id: string; attemptId: string }[]): Promise<Map<string, ExecutionStatus | null>> {
    if (attempts.length === 0) return new Map();
    const { rows } = await this.prisma.pool.query<{ attempt_id: string; status: ExecutionStatus | null }>(
      `SELECT a.attempt_id, e.status FROM unnest($1::uuid[], $2::uuid[]) AS a(id, attempt_id)
       LEFT JOIN task_execution e ON e.id = a.id
       WHERE e.id IS NULL OR e.attempt_id IS DISTINCT FROM a.attempt_id OR e.status <> 'running'`,
      [attempts.map((a) => a.id), attempts.map((a) => a.attemptId)],
    );
    return new Map(rows.map((r) => [r.attempt_id, r.status]));
  }

  /**
   * Gives a running attempt back without counting it as a failure (the worker is shutting down):
   * `retrying`, due at once, for another worker to pick up.
   */
  async releaseAttempt(id: string, attemptId: string, reason: string): Promise<boolean> {
    const moved = await transition(this.prisma, {
      ids: [id],
      from: ['running'],
      to: 'retrying',
      set: Prisma.sql`lease_until = NULL, next_attempt_at = now(), error = ${reason}`,
      guard: Prisma.sql`e.attempt_id = ${attemptId}::uuid`,
      detail: { reason },
    });
    return moved.length === 1;
  }
}
