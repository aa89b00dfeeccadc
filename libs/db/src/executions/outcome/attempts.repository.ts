import { Injectable } from '@nestjs/common';
import { type ExecutionStatus, Prisma } from '../../generated/prisma/client.js';
import { PrismaService, type Db } from '../../prisma.service.js';
import { transition } from '../execution-transition.js';
import { SUCCEED_AND_HAND_OVER } from './outcome-statements.js';
import type { HandedTurn } from '../turns/turns.repository.js';

/** Successes recorded together: which attempts were current, and the turns their ends handed on. */
export interface RecordedSuccesses {
  /** Per success asked for, in order: whether its attempt was current (false: stale, nothing written). */
  current: boolean[];
  /** Slots handed their turn by these ends: their jobs are to be pushed. */
  handed: HandedTurn[];
  /**
   * Tasks whose ended run a parked slot waits behind, none of which was handed its turn here: the
   * park committed while this statement ran; the caller hands over again (TurnsRepository).
   */
  waited: string[];
}

/**
 * A worker's side of `task_execution`: claiming an attempt, holding its lease, recording its
 * outcome. Every write is fenced by the attempt's `attempt_id`: a stale attempt changes nothing.
 */
@Injectable()
export class AttemptsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Successes of many attempts in one statement, each fenced by its `attempt_id`, with the hand-over
   * of every task they free (see SUCCEED_AND_HAND_OVER). `db`: a connection inside a transaction (a
   * success with its outbox notification), else the pool. Throws if the statement fails (the caller
   * may then record each on its own).
   */
  async succeed(
    successes: { id: string; attemptId: string; result: Prisma.InputJsonValue | null }[],
    db: Db = this.prisma,
  ): Promise<RecordedSuccesses> {
    const values = [
      successes.map((s) => s.id),
      successes.map((s) => s.attemptId),
      successes.map((s) => (s.result === null ? null : JSON.stringify(s.result))),
    ];
    const rows =
      db === this.prisma
        ? (
            await this.prisma.pool.query<{ current: string[]; handed: HandedTurn[]; waited: string[] }>({
              name: this.prisma.statementName('punctual.succeed'),
              text: SUCCEED_AND_HAND_OVER,
              values,
            })
          ).rows
        : await db.$queryRawUnsafe<{ current: string[]; handed: HandedTurn[]; waited: string[] }[]>(
            SUCCEED_AND_HAND_OVER,
            ...values,
          );
    const current = new Set(rows[0]?.current ?? []);
    return {
      current: successes.map((s) => current.has(s.attemptId)),
      handed: rows[0]?.handed ?? [],
      waited: rows[0]?.waited ?? [],
    };
  }

  /**
   * `running` → `succeeded`, fenced by `attempt_id`. False when the attempt is stale. A turn it hands
   * on (see {@link succeed}) waits for the relay to push its job: a worker records through `succeed`.
   */
  async markSucceeded(
    id: string,
    attemptId: string,
    result: Prisma.InputJsonValue | null,
    db: Db = this.prisma,
  ): Promise<boolean> {
    return (await this.succeed([{ id, attemptId, result }], db)).current[0]!;
  }

  /**
   * A failed attempt: `retrying` until `nextAttemptAt`, or `dead` when `nextAttemptAt` is null.
   * Fenced by `attempt_id`; false when the attempt is stale.
   */
  async markFailed(
    id: string,
    attemptId: string,
    error: string,
    nextAttemptAt: Date | null,
    db: Db = this.prisma,
  ): Promise<boolean> {
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
    const { rows } = await this.prisma.leasePool.query<{ attempt_id: string }>(
      `UPDATE live_execution e SET lease_until = now() + $3 * interval '1 millisecond', heartbeat_at = now()
       FROM unnest($1::uuid[], $2::uuid[]) AS a(id, attempt_id)
       WHERE e.id = a.id AND e.attempt_id = a.attempt_id AND e.status = 'running'
       RETURNING e.attempt_id`,
      [attempts.map((a) => a.id), attempts.map((a) => a.attemptId), leaseMs],
    );
    return new Set(rows.map((r) => r.attempt_id));
  }

  /**
   * Holds (or renews) the concurrency permits of handlers that run on after their attempts ended
   * (see `overrun_permit`): each until a lease from now. One statement for all of a worker's.
   */
  async keepPermits(
    permits: { attemptId: string; executionId: string; key: string }[],
    leaseMs: number,
  ): Promise<void> {
    if (permits.length === 0) return;
    await this.prisma.leasePool.query(
      `INSERT INTO overrun_permit (attempt_id, key, execution_id, until)
       SELECT a.attempt_id, a.key, a.execution_id, now() + $4 * interval '1 millisecond' FROM unnest($1::uuid[], $2::text[], $3::uuid[]) AS a(attempt_id, key, execution_id)
       ON CONFLICT (attempt_id, key) DO UPDATE SET until = GREATEST(overrun_permit.until, EXCLUDED.until)`,
      [permits.map((p) => p.attemptId), permits.map((p) => p.key), permits.map((p) => p.executionId), leaseMs],
    );
  }

  /** Extends the permits still held (see {@link keepPermits}); one that was dropped meanwhile is not brought back. */
  async renewPermits(attemptIds: string[], leaseMs: number): Promise<void> {
    if (attemptIds.length === 0) return;
    await this.prisma.leasePool.query(
      `UPDATE overrun_permit SET until = GREATEST(until, now() + $2 * interval '1 millisecond') WHERE attempt_id = ANY($1::uuid[])`,
      [attemptIds, leaseMs],
    );
  }

  /** Gives back the permits of handlers that have settled, in one statement (expired ones, whose workers died, go by the retention rules). */
  async dropPermits(attemptIds: string[]): Promise<void> {
    if (attemptIds.length === 0) return;
    await this.prisma.leasePool.query(`DELETE FROM overrun_permit WHERE attempt_id = ANY($1::uuid[])`, [attemptIds]);
  }

  /**
   * Of these running attempts, the ones that no longer own their execution, with what it is now
   * (`cancelled`, or the state another attempt left it in): one read for all of a worker's attempts.
   */
  async notOwned(attempts: { id: string; attemptId: string }[]): Promise<Map<string, ExecutionStatus | null>> {
    if (attempts.length === 0) return new Map();
    const { rows } = await this.prisma.leasePool.query<{ attempt_id: string; status: ExecutionStatus | null }>(
      `SELECT a.attempt_id, e.status FROM unnest($1::uuid[], $2::uuid[]) AS a(id, attempt_id)
       LEFT JOIN live_execution e ON e.id = a.id
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
