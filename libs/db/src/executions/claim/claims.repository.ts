import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import {
  type ExecutionStatus,
  Prisma,
  type SkipReason,
  type Task,
  type TaskExecution,
} from '../../generated/prisma/client.js';
import type { HeldOutcome } from '@punctual/planning';
import { isUniqueViolation } from '../../db-errors.js';
import { PrismaService } from '../../prisma.service.js';
import { taskFromJson } from '../../tasks/task.row.js';
import { type ExecutionRow, executionFromRow } from '../execution.row.js';
import {
  type ClaimedRow,
  type ClaimRead,
  claimReadOf,
  executionFromClaimed,
  type ReadRow,
  type WriteRow,
} from './claim.rows.js';
import { CLAIM_DIRECT, CLAIM_READ, CLAIM_WRITE } from './claim-statements.js';
import { EVENT_CTE, transition } from '../execution-transition.js';
import { runInProgressSql } from '../predicates.js';
import { TaskDefinitions } from './task-definitions.js';

/** A claim to write: the attempt, and the state the judgement saw (the write happens only if it still holds). */
export interface ClaimWrite {
  id: string;
  attemptId: string;
  workerId: string;
  /** When the leader released the job (epoch ms, the cluster's clock): recorded as `queued_at` if the row has none. */
  releasedAt?: number | null;
  seen: { status: ExecutionStatus; attempt: number; fireAt: Date; planVersion: number };
  /**
   * The judgement found the task free for this slot (no run of it in progress, no earlier slot
   * due): the write starts the attempt only if that still holds.
   */
  free: boolean;
  /**
   * True once the claim gave up waiting for this write (see the claimer's `answeredWithin`): a
   * write still queued then is not sent (flow control queues its writes per key).
   */
  abandoned?: () => boolean;
}

/**
 * What every claim statement answers for each request (the one-statement claim, the write, flow
 * control's claim and its look at full keys, the park):
 * - `started`: the attempt is this worker's. `task`: the definition it started under, when the
 *   statement brought it (the one-statement claim; the write's caller has it from its read).
 *   `roomLeft`, under flow control: the keys had room for more after it (a run held behind it may go).
 * - `held`: flow control holds it for a permit or the rate (see `HeldOutcome`, @punctual/planning).
 * - `parked`: its turn has not come; the end of the run ahead hands it its turn.
 * - `again`: not started: read and judge it (again). `unjudged`: the one-statement claim leaves it
 *   to the judgement; `changed`: the execution or its task is no longer as read (another claim, an
 *   edit, a cancel); `locked`: another transaction holds the row (an edit, an operator's action);
 *   `contended`: a concurrent claim of another slot of the task took the overlap guard.
 */
export type ClaimAnswer =
  | { kind: 'started'; execution: TaskExecution; task: Task | null; roomLeft?: boolean }
  | HeldOutcome
  | { kind: 'parked' }
  | { kind: 'again'; why: 'unjudged' | 'changed' | 'locked' | 'contended' };

/** The `again` answers written in more than one place. */
export const UNJUDGED: ClaimAnswer = { kind: 'again', why: 'unjudged' };
export const CHANGED: ClaimAnswer = { kind: 'again', why: 'changed' };
export const CONTENDED: ClaimAnswer = { kind: 'again', why: 'contended' };

/** A claim to try in one statement (see {@link ClaimsRepository.claimDirect}). */
export interface DirectClaim {
  id: string;
  attemptId: string;
  workerId: string;
  /** When the leader released the job (epoch ms, the cluster's clock): recorded as `queued_at` if the row has none. */
  releasedAt?: number | null;
  /** The execution's task when the job says (the definition kept for it need not come back). */
  taskId?: string;
  /** True once the claim gave up waiting for its answer: a claim still queued then is never sent. */
  abandoned?: () => boolean;
}

/**
 * The guard of a skip for overlap: another exclusive run of the task is still in progress, and its
 * row is not being written. A row another transaction holds may be taking the run's outcome (a
 * success whose statement waits behind a leader's lock, or is about to commit): the skip is not
 * written, and the claim reads and judges the slot again — once the outcome lands, against a run
 * that ended, by the write's own instant, before the slot's time. Without it, a success delayed on
 * its way in skips the next slot of a task whose run had ended. `SKIP LOCKED`, not a wait: a
 * transaction holding the run's row may be waiting for this slot's own row (a hand-over).
 */
const STILL_IN_PROGRESS = Prisma.raw(
  `AND (${runInProgressSql('e', 'running', 'h', 'FOR SHARE OF h SKIP LOCKED')} OR ${runInProgressSql('e', 'retrying', 'h', 'FOR SHARE OF h SKIP LOCKED')})`,
);

/**
 * A worker's claim of an attempt (DESIGN §5): first {@link claimDirect}, one fenced statement that
 * starts every attempt the judgement would start without asking it (see STARTS_WITHOUT_JUDGEMENT);
 * for the rest, a {@link read} of everything the judgement needs and, when it says run, a fenced
 * {@link claimMany} of what it read — each one statement for many executions. The small writes of
 * the other verdicts (skip, give back) are here as well; parking and buffering are the TurnsRepository's.
 */
@Injectable()
export class ClaimsRepository {
  /** The task definitions this process has parsed (see TaskDefinitions). */
  readonly definitions = new TaskDefinitions();

  constructor(private readonly prisma: PrismaService) {}

  /**
   * Starts, in one statement, the attempts that need no judgement (see CLAIM_DIRECT): one answer per
   * request, in order — `started` with its definition, or `again` (`unjudged`): it is read and judged.
   */
  async claimDirect(claims: DirectClaim[], leaseMs: number, handlers: readonly string[]): Promise<ClaimAnswer[]> {
    const { rows } = await this.prisma.pool.query<ClaimedRow & { t_version: number; t_json: string | null }>({
      name: this.prisma.statementName('punctual.claim.direct'),
      text: CLAIM_DIRECT,
      values: [
        claims.map((c) => c.id),
        claims.map((c) => c.attemptId),
        claims.map((c) => c.releasedAt ?? null),
        claims.map((c) => this.definitions.versionOf(c.taskId)),
        claims.map((c) => c.workerId),
        leaseMs,
        handlers,
      ],
    });
    const started = new Map<string, ClaimAnswer>();
    for (const row of rows) {
      const task = this.definitions.resolve(row.task_id!, row.t_version, row.t_json);
      const execution = executionFromClaimed(row);
      // The definition kept when the statement left was dropped since (the cache is full of other
      // tasks): the attempt is given back unspent and judged again with a read.
      if (!task) await this.giveBack(row.id, row.attempt_id, 'the definition was not at hand');
      else started.set(row.attempt_id, { kind: 'started', execution, task });
    }
    return claims.map((c) => started.get(c.attemptId) ?? UNJUDGED);
  }

  /**
   * {@link claimDirect} for one claim; one that meets a concurrent claim of its task (a unique
   * violation of the table as it was before partitioning) is `contended`: it is read and judged.
   */
  async claimDirectOne(claim: DirectClaim, leaseMs: number, handlers: readonly string[]): Promise<ClaimAnswer> {
    try {
      return (await this.claimDirect([claim], leaseMs, handlers))[0]!;
    } catch (error) {
      if (isUniqueViolation(error)) return CONTENDED;
      throw error;
    }
  }

  /**
   * Reads executions for their claims; an id with no row is absent from the answer. `taskId`: the
   * task the job names, whose kept definition need not come back.
   */
  async read(requests: { id: string; taskId?: string }[]): Promise<Map<string, ClaimRead>> {
    const known = requests.map((r) => this.definitions.versionOf(r.taskId));
    const { rows } = await this.prisma.pool.query<ReadRow>({
      name: this.prisma.statementName('punctual.claim.read'),
      text: CLAIM_READ,
      values: [requests.map((r) => r.id), known],
    });
    const out = new Map<string, ClaimRead>();
    const again: { id: string }[] = [];
    for (const row of rows) {
      const task = row.t_id === null ? null : this.definitions.resolve(row.t_id, row.t_version!, row.t_json);
      // The definition left out was dropped from the cache meanwhile: read once more, with none kept.
      if (row.t_id !== null && task === null) {
        again.push({ id: row.id });
        continue;
      }
      out.set(row.id, claimReadOf(row, task));
    }
    if (again.length) for (const [id, read] of await this.read(again)) out.set(id, read);
    return out;
  }

  /** An execution's whole row and its task, read again after a claim whose answer was lost (see the claimer's confirm). */
  async readClaimed(id: string): Promise<{ execution: TaskExecution; task: Task | null; now: Date } | null> {
    const rows = await this.prisma.$queryRaw<(ExecutionRow & { t_json: string | null; db_now: Date })[]>`
      SELECT e.*, to_jsonb(t)::text AS t_json, now() AS db_now FROM live_execution e LEFT JOIN task t ON t.id = e.task_id WHERE e.id = ${id}::uuid`;
    const row = rows[0];
    return row
      ? { execution: executionFromRow(row), task: row.t_json ? taskFromJson(row.t_json) : null, now: row.db_now }
      : null;
  }

  /**
   * Starts the attempts in one statement (see {@link CLAIM_WRITE}); one outcome per request, in order
   * (`contended`: a claim of another slot of the task holds the overlap guard). Throws when a row of
   * the table as it was before partitioning breaks its own overlap index (a unique violation fails
   * the statement as a whole): the caller then writes each on its own with {@link claimOne}. `db`:
   * a connection inside a transaction (flow control's claim), else the pool.
   */
  async claimMany(
    writes: ClaimWrite[],
    leaseMs: number,
    db: pg.Pool | pg.PoolClient = this.prisma.pool,
  ): Promise<ClaimAnswer[]> {
    const { rows } = await db.query<WriteRow>({
      name: this.prisma.statementName('punctual.claim.write'),
      text: CLAIM_WRITE,
      values: [
        writes.map((w) => w.id),
        writes.map((w) => w.attemptId),
        writes.map((w) => w.workerId),
        writes.map((w) => w.seen.status),
        writes.map((w) => w.seen.attempt),
        writes.map((w) => w.seen.fireAt.toISOString()),
        writes.map((w) => w.seen.planVersion),
        writes.map((w) => w.releasedAt ?? null),
        leaseMs,
        writes.map((w) => w.free),
      ],
    });
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    return writes.map((w): ClaimAnswer => {
      const row = byId.get(w.id);
      // A second request for the same execution in the batch lost to the first.
      if (!row || row.request_attempt_id !== w.attemptId) return CHANGED;
      if (row.claimed) return { kind: 'started', execution: executionFromClaimed(row), task: null };
      if (row.contended) return CONTENDED;
      return row.row_locked ? { kind: 'again', why: 'locked' } : CHANGED;
    });
  }

  /** {@link claimMany} for one attempt; a concurrent claim holding the overlap guard is `contended`. */
  async claimOne(write: ClaimWrite, leaseMs: number): Promise<ClaimAnswer> {
    try {
      return (await this.claimMany([write], leaseMs))[0]!;
    } catch (error) {
      if (isUniqueViolation(error)) return CONTENDED;
      throw error;
    }
  }

  /**
   * Ends a slot that never started as `skipped`, only while it and its task are as the judgement
   * read them (an edit or a resume since then makes it judged again), without waiting for its own
   * row when another transaction holds it. False when it changed or is locked. A skip for overlap also
   * needs the run it overlapped still in progress and not being written (see STILL_IN_PROGRESS).
   */
  async skipUnstarted(
    id: string,
    reason: SkipReason,
    seen: {
      status: ExecutionStatus;
      attempt: number;
      taskVersion: number;
      task: { planVersion: number; status: string } | null;
    },
  ): Promise<boolean> {
    const task = seen.task
      ? Prisma.sql`EXISTS (SELECT 1 FROM task t WHERE t.id = e.task_id AND t.plan_version = ${seen.task.planVersion} AND t.status = ${seen.task.status}::task_status)`
      : Prisma.sql`e.task_id IS NULL`;
    const moved = await transition(this.prisma, {
      ids: [id],
      from: [seen.status],
      to: 'skipped',
      set: Prisma.sql`skip_reason = ${reason}::skip_reason, finished_at = now(), lease_until = NULL, next_attempt_at = NULL`,
      guard: Prisma.sql`e.attempt = ${seen.attempt} AND e.task_version = ${seen.taskVersion} AND ${task} ${reason === 'overlap' ? STILL_IN_PROGRESS : Prisma.empty}`,
      detail: { reason },
      skipLocked: true,
    });
    return moved.length === 1;
  }

  /**
   * Gives a claimed attempt back without spending it: its handler never started (the claim's
   * answer was lost with its connection and came back too late to run within the lease). A first
   * attempt goes back to `queued`, a later one to `retrying`, due now; the start its claim recorded
   * in its rate key's window and its namespace's minute is taken back. Fenced by `attempt_id`.
   */
  async giveBack(id: string, attemptId: string, reason: string): Promise<boolean> {
    const moved = await this.prisma.$queryRaw<{ id: string }[]>`
      WITH prev AS (SELECT id, status, started_at FROM live_execution WHERE id = ${id}::uuid AND attempt_id = ${attemptId}::uuid AND status = 'running' FOR UPDATE),
      moved AS (
        UPDATE live_execution e SET
          status = CASE WHEN e.attempt <= 1 THEN 'queued'::execution_status ELSE 'retrying'::execution_status END,
          attempt = e.attempt - 1, lease_until = NULL, next_attempt_at = CASE WHEN e.attempt <= 1 THEN NULL ELSE now() END,
          started_at = CASE WHEN e.attempt <= 1 THEN NULL ELSE e.started_at END, worker_id = CASE WHEN e.attempt <= 1 THEN NULL ELSE e.worker_id END
        FROM prev WHERE e.id = prev.id
        RETURNING e.id, e.scheduled_for, e.status, e.attempt, e.worker_id, e.rate_key, e.quota_namespace, prev.status AS from_status, prev.started_at AS claimed_at
      ),
      -- The start its claim put in its rate key's window and its namespace's minute: never spent.
      unstarted AS (
        DELETE FROM flow_start f USING moved m WHERE f.key = m.rate_key AND f.at >= m.claimed_at AND f.execution_id = m.id),
      unstarted_quota AS (
        DELETE FROM quota_start q USING moved m
        WHERE q.namespace = m.quota_namespace AND q.at >= m.claimed_at AND q.execution_id = m.id),
      ${EVENT_CTE(Prisma.sql`jsonb_build_object('reason', 'given back', 'detail', ${reason}::text, 'claimedAt', claimed_at)`)}
      SELECT id FROM moved`;
    return moved.length === 1;
  }
}
