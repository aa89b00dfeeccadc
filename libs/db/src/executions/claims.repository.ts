import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { type ExecutionStatus, Prisma, type SkipReason, type Task, type TaskExecution } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
import { taskFromJson } from '../tasks.repository.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import { CLAIM_READ, CLAIM_WRITE } from './claim-statements.js';
import { EVENT_CTE, transition } from './execution-transition.js';
import { TaskDefinitions } from './task-definitions.js';
import { CLAIM_DIRECT } from './turn-statements.js';

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

const instant = (ms: number | null) => (ms === null ? null : new Date(ms));

/** A claimed attempt as the claim statements return it (see CLAIMED_COLUMNS). */
export interface ClaimedRow {
  id: string;
  task_id: string | null;
  task_name: string;
  trigger: TaskExecution['trigger'];
  attempt: number;
  attempt_id: string;
  worker_id: string;
  exclusive: boolean;
  task_version: number;
  error: string | null;
  payload: string | null;
  pinned_definition: string | null;
  concurrency_key: string | null;
  rate_key: string | null;
  scheduled_ms: number;
  fire_ms: number;
  queued_ms: number | null;
  started_ms: number;
  lease_ms: number;
  created_ms: number;
}

/** The execution a claim started, as a whole row: every column it does not return is known from the claim. */
export function executionFromClaimed(row: ClaimedRow): TaskExecution {
  const startedAt = new Date(row.started_ms);
  return {
    id: row.id, taskId: row.task_id, taskName: row.task_name, scheduledFor: new Date(row.scheduled_ms), fireAt: new Date(row.fire_ms), trigger: row.trigger,
    status: 'running', skipReason: null, attempt: row.attempt, attemptId: row.attempt_id, taskVersion: row.task_version, exclusive: row.exclusive,
    workerId: row.worker_id, queuedAt: instant(row.queued_ms), startedAt, heartbeatAt: startedAt, leaseUntil: new Date(row.lease_ms), finishedAt: null,
    nextAttemptAt: null, error: row.error, result: null, payload: row.payload === null ? null : (JSON.parse(row.payload) as Prisma.JsonValue),
    pinnedDefinition: row.pinned_definition === null ? null : (JSON.parse(row.pinned_definition) as Prisma.JsonValue),
    concurrencyKey: row.concurrency_key, rateKey: row.rate_key, heldAt: null, parkedAt: null, waitedOn: false, createdAt: new Date(row.created_ms),
  };
}

/** A claim to try in one statement (see {@link ClaimsRepository.claimDirect}). */
export interface DirectClaim {
  id: string;
  attemptId: string;
  workerId: string;
  /** When the leader released the job (epoch ms, the cluster's clock): recorded as `queued_at` if the row has none. */
  releasedAt?: number | null;
  /** The execution's task when the job says (the definition kept for it need not come back). */
  taskId?: string;
}

/** An attempt started, and the definition of its task at the version it started under. */
export interface StartedAttempt {
  execution: TaskExecution;
  task: Task;
}

type WriteRow = ClaimedRow & { request_id: string; request_attempt_id: string; row_locked: boolean; claimed: boolean };

/**
 * A worker's claim of an attempt (DESIGN §5): first {@link claimDirect}, one fenced statement that
 * starts every attempt the judgement would start without asking it (see STARTS_WITHOUT_JUDGEMENT);
 * for the rest, a {@link read} of everything the judgement needs and, when it says run, a fenced
 * {@link claimMany} of what it read — each one statement for many executions. The small writes of
 * the other verdicts (skip, buffer, give back) are here as well; parking is the TurnsRepository's.
 */
@Injectable()
export class ClaimsRepository {
  /** The task definitions this process has parsed (see TaskDefinitions). */
  readonly definitions = new TaskDefinitions();

  constructor(private readonly prisma: PrismaService) {}

  /**
   * Starts, in one statement, the attempts that need no judgement (see CLAIM_DIRECT): by attempt
   * id, the attempt started and its definition. A request absent from the answer was not started:
   * it is read and judged.
   */
  async claimDirect(claims: DirectClaim[], leaseMs: number, handlers: readonly string[]): Promise<Map<string, StartedAttempt>> {
    const { rows } = await this.prisma.pool.query<ClaimedRow & { t_version: number; t_json: string | null }>({
      name: 'punctual.claim.direct',
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
    const started = new Map<string, StartedAttempt>();
    for (const row of rows) {
      const task = this.definitions.resolve(row.task_id!, row.t_version, row.t_json);
      const execution = executionFromClaimed(row);
      // The definition kept when the statement left was dropped since (the cache is full of other
      // tasks): the attempt is given back unspent and judged again with a read.
      if (!task) await this.giveBack(row.id, row.attempt_id, 'the definition was not at hand');
      else started.set(row.attempt_id, { execution, task });
    }
    return started;
  }

  /**
   * Reads executions for their claims; an id with no row is absent from the answer. `taskId`: the
   * task the job names, whose kept definition need not come back.
   */
  async read(requests: { id: string; taskId?: string }[]): Promise<Map<string, ClaimRead>> {
    const known = requests.map((r) => this.definitions.versionOf(r.taskId));
    const { rows } = await this.prisma.pool.query<ReadRow>({ name: 'punctual.claim.read', text: CLAIM_READ, values: [requests.map((r) => r.id), known] });
    const out = new Map<string, ClaimRead>();
    const again: { id: string }[] = [];
    for (const row of rows) {
      const task = row.t_id === null ? null : this.definitions.resolve(row.t_id, row.t_version!, row.t_json);
      // The definition left out was dropped from the cache meanwhile: read once more, with none kept.
      if (row.t_id !== null && task === null) {
        again.push({ id: row.id });
        continue;
      }
      out.set(row.id, {
        execution: {
          id: row.id, taskId: row.task_id, taskName: row.task_name, status: row.status, attempt: row.attempt, attemptId: row.attempt_id,
          trigger: row.trigger, exclusive: row.exclusive, taskVersion: row.task_version, pinned: row.pinned,
          scheduledFor: new Date(row.scheduled_ms), fireAt: new Date(row.fire_ms), leaseUntil: instant(row.lease_ms), nextAttemptAt: instant(row.next_attempt_ms),
          heldAt: instant(row.held_ms),
        },
        task,
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
      });
    }
    if (again.length) for (const [id, read] of await this.read(again)) out.set(id, read);
    return out;
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
      if (row.claimed) return { kind: 'claimed', execution: executionFromClaimed(row) };
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
