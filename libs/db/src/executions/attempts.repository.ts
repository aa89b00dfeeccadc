import { Injectable } from '@nestjs/common';
import { type OverlapPolicy, Prisma, type SkipReason, type TaskExecution } from '../generated/prisma/client.js';
import { PrismaService, type Db } from '../prisma.service.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import { EVENT_CTE_TEXT, PENDING, transition } from './execution-transition.js';

/**
 * What a claim found.
 * - `busy`: another exclusive run of the task that started on time was already running at this
 *   slot's `scheduled_for` (a run released a little late counts as if it had been released on time),
 *   or this slot, released on time, has waited its turn behind a backlog's run for longer than its
 *   grace: the overlap policy decides.
 * - `wait`: not this slot's turn: an earlier slot of the task is due and has not started, or the run
 *   in progress started after this slot was due or belongs to a backlog (a backlog runs one after
 *   another, in slot order).
 * - `late`: the first attempt of a scheduled slot that can no longer start within `maxDelay`: the
 *   leader's misfire policy decides it (the job comes back to a catch-up run, or to a slot
 *   recorded missed).
 * - `contended`: a concurrent claim of the same task won the race on the overlap guard; asking
 *   again gives one of the others.
 */
export type ClaimOutcome =
  | { kind: 'claimed'; execution: TaskExecution }
  | { kind: 'lost' }
  | { kind: 'busy' }
  | { kind: 'wait'; taskId: string }
  | { kind: 'late' }
  | { kind: 'contended' };

export interface ClaimRequest {
  id: string;
  attemptId: string;
  workerId: string;
  /**
   * When the leader released the job (epoch ms, the cluster's clock), as the job says: a claim that
   * finds its row not yet marked `queued` judges and records the release by it.
   */
  releasedAt?: number | null;
}

const UNIQUE_VIOLATION = '23505';

/**
 * A run that had to wait its turn behind other slots of its task (`held_at`), or was released this
 * long after its `fire_at` (a new leader adopting what its predecessor left, the relay replacing a
 * job Redis lost), belongs to a backlog, as catch-up and backfill runs do: the slots that come while
 * it runs wait behind it. A run released on time and still running at the next slot is slow, and
 * that is what the overlap policy is for (a slow run never piles up behind itself).
 */
const BACKLOG_RELEASE_MS = 1_000;
/**
 * How long a slot released on time waits its turn behind a backlog's run before the overlap policy
 * judges it after all: long enough for a backlog of quick runs to drain, short enough that a task
 * slower than its schedule cannot pile up behind its own late runs. The backlog's own slots wait
 * without limit (there are finitely many of them).
 */
const BACKLOG_GRACE_MS = 5_000;

// A worker's claims and batched successes go to the pool directly: they run thousands of times a
// second under load, where the client's per-statement work costs more than the statement itself.
//
// The judgement is made in the claim's own statement, over its snapshot, so a batch of claims of one
// task's backlog starts only its earliest slot and reports the others as `wait`: the overlap guard
// (a unique index) is then a backstop that concurrent statements alone can hit.
const CLAIM = `
  WITH req AS (
    SELECT r.id, r.attempt_id, r.worker_id, LEAST(to_timestamp(r.released_ms / 1000.0), now()) AS released_at
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $6::float8[]) AS r(id, attempt_id, worker_id, released_ms)
  ),
  picked AS (SELECT DISTINCT ON (id) * FROM req ORDER BY id),
  prev AS (
    SELECT e.id, e.status, e.task_id, e.scheduled_for, e.fire_at, e.trigger, e.exclusive, e.attempt, e.lease_until, e.queued_at,
           e.started_at, e.worker_id
    FROM task_execution e WHERE e.id IN (SELECT id FROM picked) ORDER BY e.id FOR UPDATE
  ),
  claimable AS (
    -- A slot of a backlog itself (a catch-up or backfill run, or one released late) waits its turn
    -- however long the backlog takes: it is never skipped for the backlog's sake.
    -- (A job usually reaches a worker before the leader marks its row queued: the job says when it
    -- was released, or, if it does not, it is being released now.)
    SELECT p.*, (p.trigger IN ('catchup', 'backfill')
                 OR COALESCE(p.queued_at, pk.released_at, now()) > p.fire_at + interval '${BACKLOG_RELEASE_MS} milliseconds') AS in_backlog
    FROM prev p JOIN picked pk USING (id)
    WHERE p.status = ANY($5::execution_status[])
       -- An expired lease is taken over only while attempts remain; otherwise the reaper ends it dead.
       OR (p.status = 'running' AND p.lease_until < now() AND p.attempt < (SELECT t.max_attempts FROM task t WHERE t.id = p.task_id))
  ),
  judged AS (
    SELECT c.id, c.task_id,
      CASE
        -- A first attempt of a scheduled slot that can no longer start within maxDelay is the
        -- leader's to decide by the misfire policy (run it as a catch-up, or record it missed).
        WHEN c.trigger = 'schedule' AND c.status IN ('scheduled', 'queued')
          AND now() > c.fire_at + t.max_delay_ms * interval '1 millisecond' THEN 'late'
        WHEN NOT c.exclusive THEN NULL
        -- A run of the task that started on time was in progress at this slot's own time: the
        -- overlap policy decides. Judged only once that time has come (a job may be claimed a
        -- moment early), and as if the run had been released on time: while this slot has waited
        -- less than the run was released late, the overlap may be the late release's (a
        -- failover's), not the task's. Until then the slot is looked at again ('recheck': a wait
        -- that does not make it a backlog's run).
        WHEN r.id IS NOT NULL AND r.started_at <= c.scheduled_for AND NOT backlog.run THEN
          CASE WHEN now() >= c.scheduled_for AND COALESCE(r.queued_at, r.started_at) - r.fire_at <= now() - c.scheduled_for
            THEN 'busy' ELSE 'recheck' END
        -- A slot released on time that has waited its turn behind a backlog's run past the grace.
        WHEN r.id IS NOT NULL AND NOT c.in_backlog AND now() > c.fire_at + interval '${BACKLOG_GRACE_MS} milliseconds' THEN 'busy'
        WHEN r.id IS NOT NULL OR EXISTS (
          SELECT 1 FROM task_execution o
          WHERE o.task_id = c.task_id AND o.scheduled_for < c.scheduled_for AND o.status IN ('scheduled', 'queued')
            AND o.exclusive AND o.fire_at <= now()
        ) THEN 'wait'
      END AS held
    FROM claimable c
    LEFT JOIN task t ON t.id = c.task_id
    LEFT JOIN task_execution r ON r.task_id = c.task_id AND r.status = 'running' AND r.exclusive AND r.id <> c.id
    -- The run in progress belongs to a backlog: a catch-up or backfill run, one released late, or
    -- one that had to wait its turn.
    CROSS JOIN LATERAL (
      SELECT r.trigger IN ('catchup', 'backfill') OR r.held_at IS NOT NULL
          OR COALESCE(r.queued_at, r.started_at) > r.fire_at + interval '${BACKLOG_RELEASE_MS} milliseconds' AS run
    ) backlog
  ),
  held AS (
    UPDATE task_execution e SET held_at = now()
    FROM judged WHERE e.id = judged.id AND judged.held = 'wait' AND e.held_at IS NULL
  ),
  moved AS (
    UPDATE task_execution e
    SET status = 'running', attempt = e.attempt + 1, attempt_id = picked.attempt_id, worker_id = picked.worker_id,
        -- Claimed before the leader marked it: the release is recorded here (the history shows it).
        queued_at = CASE WHEN prev.status = 'scheduled' THEN COALESCE(e.queued_at, picked.released_at, now()) ELSE e.queued_at END,
        started_at = now(), heartbeat_at = now(), lease_until = now() + $4 * interval '1 millisecond', next_attempt_at = NULL
    FROM judged JOIN picked USING (id) JOIN prev USING (id)
    WHERE e.id = judged.id AND judged.held IS NULL
    RETURNING e.*, prev.status AS from_status
  ),
  -- The first attempt's claim was read from the row (see EXECUTION_HISTORY): written down before a
  -- second attempt replaces its started_at and worker_id.
  first_claim AS (
    INSERT INTO execution_event (execution_id, from_status, to_status, at, worker_id, detail)
    SELECT p.id, CASE WHEN m.queued_at IS NOT NULL THEN 'queued' ELSE 'scheduled' END::execution_status, 'running', p.started_at, p.worker_id,
           jsonb_build_object('attempt', 1)
    FROM moved m JOIN prev p USING (id)
    WHERE p.attempt = 1 AND p.started_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM execution_event ev WHERE ev.execution_id = p.id AND ev.to_status = 'running' AND ev.detail->>'attempt' = '1')
  ),
  ${EVENT_CTE_TEXT(`jsonb_build_object('attempt', attempt)`)}
  SELECT p.id AS request_id, p.attempt_id AS request_attempt_id, CASE j.held WHEN 'recheck' THEN 'wait' ELSE j.held END AS held,
         j.task_id AS held_task_id, m.*
  FROM picked p LEFT JOIN judged j ON j.id = p.id LEFT JOIN moved m ON m.id = p.id`;

const MARK_SUCCEEDED_MANY = `
  WITH req AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[]) AS r(id, attempt_id, result)),
  prev AS (SELECT e.id, e.status FROM task_execution e WHERE e.id IN (SELECT id FROM req) ORDER BY e.id FOR UPDATE),
  moved AS (
    UPDATE task_execution e
    SET status = 'succeeded', finished_at = now(), lease_until = NULL, error = NULL, result = req.result
    FROM prev JOIN req USING (id)
    WHERE e.id = prev.id AND prev.status = 'running' AND e.attempt_id = req.attempt_id
    RETURNING e.id, e.attempt_id, e.status, e.attempt, e.worker_id, prev.status AS from_status
  ),
  ${EVENT_CTE_TEXT()}
  SELECT attempt_id FROM moved`;

type ClaimRow = ExecutionRow & { request_id: string; request_attempt_id: string; held: 'busy' | 'wait' | 'late' | null; held_task_id: string | null };

/**
 * A worker's side of `task_execution`: claiming an attempt, holding its lease, recording its
 * outcome. Every write is fenced by the attempt's `attempt_id`: a stale attempt changes nothing.
 */
@Injectable()
export class AttemptsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Claims an execution for one attempt: `running`, a fresh `attempt_id` and a lease — only from a
   * pending state, or from `running` whose lease expired while attempts remain — unless the task's
   * turn says otherwise (see {@link ClaimOutcome}).
   */
  async claim(request: ClaimRequest, leaseMs: number): Promise<ClaimOutcome> {
    try {
      return (await this.claimMany([request], leaseMs))[0]!;
    } catch (error) {
      if ((error as { code?: string })?.code === UNIQUE_VIOLATION) return { kind: 'contended' };
      throw error;
    }
  }

  /**
   * {@link claim} for many executions in one statement (a worker's concurrent jobs); rows locked in
   * id order. The statement fails as a whole when concurrent statements break the overlap guard or
   * deadlock on it: the caller then claims each on its own with {@link claim}.
   */
  async claimMany(requests: ClaimRequest[], leaseMs: number): Promise<ClaimOutcome[]> {
    const { rows } = await this.prisma.pool.query<ClaimRow>(CLAIM, [
      requests.map((r) => r.id),
      requests.map((r) => r.attemptId),
      requests.map((r) => r.workerId),
      leaseMs,
      PENDING,
      requests.map((r) => r.releasedAt ?? null),
    ]);
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    return requests.map((r): ClaimOutcome => {
      const row = byId.get(r.id);
      // A second request for the same execution lost to the first.
      if (!row || row.request_attempt_id !== r.attemptId) return { kind: 'lost' };
      if (row.held === 'busy') return { kind: 'busy' };
      if (row.held === 'wait') return { kind: 'wait', taskId: row.held_task_id! };
      if (row.held === 'late') return { kind: 'late' };
      return row.id ? { kind: 'claimed', execution: executionFromRow(row) } : { kind: 'lost' };
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

  /** Ends an execution as `skipped` with a reason: from a pending state, or from the caller's own attempt. */
  async markSkipped(id: string, reason: SkipReason, attemptId: string | null): Promise<boolean> {
    const moved = await transition(this.prisma, {
      ids: [id],
      from: attemptId ? ['running'] : PENDING,
      to: 'skipped',
      set: Prisma.sql`skip_reason = ${reason}::skip_reason, finished_at = now(), lease_until = NULL`,
      guard: attemptId ? Prisma.sql`e.attempt_id = ${attemptId}::uuid` : undefined,
      detail: { reason },
    });
    return moved.length === 1;
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

  /**
   * For a claim that found its task busy: the task's overlap policy and the exclusive execution of
   * the task running now (if it still is). Null when the execution or its task is gone.
   */
  async rivalOf(id: string): Promise<{ taskId: string; overlap: OverlapPolicy; runningId: string | null } | null> {
    const rows = await this.prisma.$queryRaw<{ taskId: string; overlap: OverlapPolicy; runningId: string | null }[]>`
      SELECT t.id AS "taskId", t.overlap, r.id AS "runningId"
      FROM task_execution e JOIN task t ON t.id = e.task_id
      LEFT JOIN task_execution r ON r.task_id = e.task_id AND r.status = 'running' AND r.exclusive AND r.id <> e.id
      WHERE e.id = ${id}::uuid`;
    return rows[0] ?? null;
  }

  /** The definition an execution was pinned to by an edit of its task while it was in progress. */
  async pinnedDefinition(id: string): Promise<Prisma.JsonValue | null> {
    const row = await this.prisma.taskExecution.findUnique({ where: { id }, select: { pinnedDefinition: true } });
    return row?.pinnedDefinition ?? null;
  }

  /**
   * Marks a pending execution as the one that waits for the task's running execution
   * (`overlap=buffer_one`). The task row lock makes "at most one waiting" hold under races; the
   * transaction is short and bounded, so a worker frozen inside it cannot hold the task's lock
   * (and with it edits and planning of the task) for long. False when another one already waits.
   */
  async holdAsBuffered(id: string, taskId: string): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL idle_in_transaction_session_timeout = 2000`;
      await tx.$executeRaw`SET LOCAL lock_timeout = 2000`;
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
}
