import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { type ExecutionStatus, Prisma, type SkipReason, type Task, type TaskExecution } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
import { taskFromJson } from '../tasks.repository.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import { CLAIM_READ, CLAIM_WRITE } from './claim-statements.js';
import { EVENT_CTE, transition } from './execution-transition.js';

/** Another exclusive execution of the same task in progress (running, or between attempts). */
export interface ClaimHolder {
  id: string;
  running: boolean;
  fireAt: Date;
  /** When its first attempt started. */
  firstStartedAt: Date;
  /** When it was released to the queue (null: not recorded). */
  releasedAt: Date | null;
}

/** The execution as the judgement reads it (the attempt's whole row comes back from the write). */
export type ClaimedExecution = Pick<
  TaskExecution,
  'id' | 'taskId' | 'taskName' | 'status' | 'attempt' | 'attemptId' | 'trigger' | 'scheduledFor' | 'fireAt' | 'exclusive' | 'taskVersion' | 'leaseUntil' | 'nextAttemptAt' | 'heldAt'
> & {
  /** An edit pinned the definition it started with on it. */
  pinned: boolean;
};

/** What a claim is judged by: the execution, its task and the task's other runs, one snapshot. */
export interface ClaimRead {
  execution: ClaimedExecution;
  /** The task as it is now (null once deleted). */
  task: Task | null;
  holders: ClaimHolder[];
  /** An earlier exclusive slot of the task is due and has not started. */
  earlierDue: boolean;
  /** Another pending slot of the task is the one buffered behind the run in progress. */
  otherBuffered: boolean;
  /** Postgres' clock when the snapshot was taken. */
  now: Date;
}

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
 * - `claimed`: the attempt is this worker's.
 * - `changed`: the execution or its task is no longer as read (another claim, an edit, a cancel): read again.
 * - `locked`: another transaction holds the row (an edit, an operator's action): read again shortly.
 * - `contended`: a concurrent claim of another slot of the task took the overlap guard: read again.
 */
export type ClaimWriteOutcome = { kind: 'claimed'; execution: TaskExecution } | { kind: 'changed' } | { kind: 'locked' } | { kind: 'contended' };

const UNIQUE_VIOLATION = '23505';

type ReadRow = Pick<ExecutionRow, 'id' | 'task_id' | 'task_name' | 'status' | 'attempt' | 'attempt_id' | 'trigger' | 'exclusive' | 'task_version'> & {
  pinned: boolean;
  scheduled_ms: number;
  fire_ms: number;
  lease_ms: number | null;
  next_attempt_ms: number | null;
  held_ms: number | null;
  now_ms: number;
  t_id: string | null;
  t_version: number | null;
  t_json: string | null;
  holders: { id: string; running: boolean; fireAt: string; firstStartedAt: string; releasedAt: string | null }[];
  earlier_due: boolean;
  other_buffered: boolean;
};

/** Task definitions this process has parsed, by id, at the version it saw (bounded). */
const DEFINITIONS_KEPT = 10_000;
const instant = (ms: number | null) => (ms === null ? null : new Date(ms));
type WriteRow = ExecutionRow & { request_id: string; request_attempt_id: string; row_locked: boolean };

/**
 * A worker's claim of an attempt, split where the judgement sits between (DESIGN §5, see
 * `judgeClaim`): a read of everything the judgement needs, in one statement for many executions,
 * and a fenced write that starts the attempts the judgement allowed, in one statement too. The
 * small writes of the other verdicts (skip, buffer, give back) are here as well.
 */
@Injectable()
export class ClaimsRepository {
  private readonly definitions = new Map<string, Task>();

  constructor(private readonly prisma: PrismaService) {}

  /** Reads executions for their claims; an id with no row is absent from the answer. */
  async read(ids: string[]): Promise<Map<string, ClaimRead>> {
    const { rows } = await this.prisma.pool.query<ReadRow>({ name: 'punctual.claim.read', text: CLAIM_READ, values: [ids] });
    return new Map(
      rows.map((row) => [
        row.id,
        {
          execution: {
            id: row.id, taskId: row.task_id, taskName: row.task_name, status: row.status, attempt: row.attempt, attemptId: row.attempt_id,
            trigger: row.trigger, exclusive: row.exclusive, taskVersion: row.task_version, pinned: row.pinned,
            scheduledFor: new Date(row.scheduled_ms), fireAt: new Date(row.fire_ms), leaseUntil: instant(row.lease_ms), nextAttemptAt: instant(row.next_attempt_ms),
            heldAt: instant(row.held_ms),
          },
          task: this.definitionOf(row),
          holders: row.holders.map((h) => ({
            id: h.id,
            running: h.running,
            fireAt: new Date(h.fireAt),
            firstStartedAt: new Date(h.firstStartedAt),
            releasedAt: h.releasedAt === null ? null : new Date(h.releasedAt),
          })),
          earlierDue: row.earlier_due,
          otherBuffered: row.other_buffered,
          now: new Date(row.now_ms),
        },
      ]),
    );
  }

  /**
   * The task of a read row, parsed once per version this process sees: under load a worker reads
   * the same tasks' definitions over and over. The copy is shared: callers must not change it (a
   * claim hands its handler a copy of its own). A task's `version` moves on every change of its
   * definition; the columns the planner alone moves (cursor, counters) may be older in a kept copy,
   * and the claim reads none of them.
   */
  private definitionOf(row: ReadRow): Task | null {
    if (row.t_id === null || row.t_json === null) return null;
    const kept = this.definitions.get(row.t_id);
    if (kept && kept.version === row.t_version) return kept;
    const task = taskFromJson(row.t_json);
    if (this.definitions.size >= DEFINITIONS_KEPT) this.definitions.clear();
    this.definitions.set(task.id, task);
    return task;
  }

  /** An execution's whole row and its task, read again after a claim whose answer was lost (see the claimer's confirm). */
  async readClaimed(id: string): Promise<{ execution: TaskExecution; task: Task | null; now: Date } | null> {
    const rows = await this.prisma.$queryRaw<(ExecutionRow & { t_json: string | null; db_now: Date })[]>`
      SELECT e.*, to_jsonb(t)::text AS t_json, now() AS db_now FROM task_execution e LEFT JOIN task t ON t.id = e.task_id WHERE e.id = ${id}::uuid`;
    const row = rows[0];
    return row ? { execution: executionFromRow(row), task: row.t_json ? taskFromJson(row.t_json) : null, now: row.db_now } : null;
  }

  /**
   * Starts the attempts in one statement (see {@link CLAIM_WRITE}); one outcome per request, in order.
   * Throws when concurrent claims break the overlap guard (a unique violation fails the statement
   * as a whole): the caller then writes each on its own with {@link claimOne}. `db`: a connection
   * inside a transaction (flow control's claim), else the pool.
   */
  async claimMany(writes: ClaimWrite[], leaseMs: number, db: pg.Pool | pg.PoolClient = this.prisma.pool): Promise<ClaimWriteOutcome[]> {
    const { rows } = await db.query<WriteRow>({ name: 'punctual.claim.write', text: CLAIM_WRITE, values: [
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
    ] });
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    return writes.map((w): ClaimWriteOutcome => {
      const row = byId.get(w.id);
      // A second request for the same execution in the batch lost to the first.
      if (!row || row.request_attempt_id !== w.attemptId) return { kind: 'changed' };
      if (row.id) return { kind: 'claimed', execution: executionFromRow(row) };
      return row.row_locked ? { kind: 'locked' } : { kind: 'changed' };
    });
  }

  /** {@link claimMany} for one attempt; a concurrent claim holding the overlap guard is `contended`. */
  async claimOne(write: ClaimWrite, leaseMs: number): Promise<ClaimWriteOutcome> {
    try {
      return (await this.claimMany([write], leaseMs))[0]!;
    } catch (error) {
      if ((error as { code?: string })?.code === UNIQUE_VIOLATION) return { kind: 'contended' };
      throw error;
    }
  }

  /**
   * Ends a slot that never started as `skipped`, only while it and its task are as the judgement
   * read them (an edit or a resume since then makes it judged again), without waiting for a row
   * another transaction holds. False when it changed or is held.
   */
  async skipUnstarted(id: string, reason: SkipReason, seen: { status: ExecutionStatus; attempt: number; taskVersion: number; task: { planVersion: number; status: string } | null }): Promise<boolean> {
    const task = seen.task
      ? Prisma.sql`EXISTS (SELECT 1 FROM task t WHERE t.id = e.task_id AND t.plan_version = ${seen.task.planVersion} AND t.status = ${seen.task.status}::task_status)`
      : Prisma.sql`e.task_id IS NULL`;
    const moved = await transition(this.prisma, {
      ids: [id],
      from: [seen.status],
      to: 'skipped',
      set: Prisma.sql`skip_reason = ${reason}::skip_reason, finished_at = now(), lease_until = NULL, next_attempt_at = NULL`,
      guard: Prisma.sql`e.attempt = ${seen.attempt} AND e.task_version = ${seen.taskVersion} AND ${task}`,
      detail: { reason },
      skipLocked: true,
    });
    return moved.length === 1;
  }

  /**
   * Marks a pending execution as the one that waits for the task's run in progress
   * (`overlap=buffer_one`). The task row lock (`FOR NO KEY UPDATE`: claims and the planner do not
   * wait for it, an edit does) makes "at most one waiting" hold under races; the transaction is short
   * and bounded. False when another one already waits.
   */
  async holdAsBuffered(id: string, taskId: string): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL idle_in_transaction_session_timeout = 2000`;
      await tx.$executeRaw`SET LOCAL lock_timeout = 2000`;
      await tx.$queryRaw`SELECT id FROM task WHERE id = ${taskId}::uuid FOR NO KEY UPDATE`;
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
   * Gives a claimed attempt back without spending it: its handler never started (the claim's
   * answer was lost with its connection and came back too late to run within the lease). A first
   * attempt goes back to `queued`, a later one to `retrying`, due now. Fenced by `attempt_id`.
   */
  async giveBack(id: string, attemptId: string, reason: string): Promise<boolean> {
    const moved = await this.prisma.$queryRaw<{ id: string }[]>`
      WITH prev AS (SELECT id, status, started_at FROM task_execution WHERE id = ${id}::uuid AND attempt_id = ${attemptId}::uuid AND status = 'running' FOR UPDATE),
      moved AS (
        UPDATE task_execution e SET
          status = CASE WHEN e.attempt <= 1 THEN 'queued'::execution_status ELSE 'retrying'::execution_status END,
          attempt = e.attempt - 1, lease_until = NULL, next_attempt_at = CASE WHEN e.attempt <= 1 THEN NULL ELSE now() END,
          started_at = CASE WHEN e.attempt <= 1 THEN NULL ELSE e.started_at END, worker_id = CASE WHEN e.attempt <= 1 THEN NULL ELSE e.worker_id END
        FROM prev WHERE e.id = prev.id
        RETURNING e.id, e.status, e.attempt, e.worker_id, prev.status AS from_status, prev.started_at AS claimed_at
      ),
      ${EVENT_CTE(Prisma.sql`jsonb_build_object('reason', 'given back', 'detail', ${reason}::text, 'claimedAt', claimed_at)`)}
      SELECT id FROM moved`;
    return moved.length === 1;
  }
}
