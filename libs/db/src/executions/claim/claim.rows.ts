import { splitQualifiedName } from '@punctual/contract';
import type { RunInProgress, RunQuota } from '@punctual/planning';
import type { Prisma, Task, TaskExecution } from '../../generated/prisma/client.js';
import type { ExecutionRow } from '../execution.row.js';

// The rows the claim statements answer (see claim-statements.ts), and what a
// worker makes of them.

/** The execution as the judgement reads it (the attempt's whole row comes back from the write). */
export type ClaimedExecution = Pick<
  TaskExecution,
  | 'id'
  | 'taskId'
  | 'taskName'
  | 'status'
  | 'attempt'
  | 'attemptId'
  | 'trigger'
  | 'scheduledFor'
  | 'fireAt'
  | 'exclusive'
  | 'taskVersion'
  | 'leaseUntil'
  | 'nextAttemptAt'
  | 'heldAt'
> & {
  /** An edit pinned the definition it started with on it. */
  pinned: boolean;
  /** Of that pinned definition (null: not pinned), what the claim needs: the handler it runs, the attempts it has. */
  pinnedHandler: string | null;
  pinnedMaxAttempts: number | null;
};

/** What a claim is judged by: the execution, its task and the task's other runs, one snapshot. */
export interface ClaimRead {
  execution: ClaimedExecution;
  /** The task as it is now (null once deleted). */
  task: Task | null;
  runsInProgress: RunInProgress[];
  /** An earlier exclusive slot of the task is due and has not started. */
  earlierDue: boolean;
  /** Another pending slot of the task is the one buffered behind the run in progress. */
  otherBuffered: boolean;
  /** The task's scheduled slot before this one; null when there is none, or no run of the task is in progress. */
  previousSlotAt: Date | null;
  /** The run quotas of the task's namespace (null: it has none). */
  quota: RunQuota | null;
  /** Postgres' clock when the snapshot was taken. */
  now: Date;
}

/** A row of CLAIM_READ. */
export type ReadRow = Pick<
  ExecutionRow,
  'id' | 'task_id' | 'task_name' | 'status' | 'attempt' | 'attempt_id' | 'trigger' | 'exclusive' | 'task_version'
> & {
  pinned: boolean;
  pinned_handler: string | null;
  pinned_max_attempts: number | null;
  scheduled_ms: number;
  fire_ms: number;
  lease_ms: number | null;
  next_attempt_ms: number | null;
  held_ms: number | null;
  now_ms: number;
  t_id: string | null;
  t_version: number | null;
  t_json: string | null;
  runs_in_progress: {
    id: string;
    running: boolean;
    fireAt: string;
    firstStartedAt: string;
    releasedAt: string | null;
  }[];
  earlier_due: boolean;
  other_buffered: boolean;
  previous_slot_ms: number | null;
  quota: RunQuota | null;
};

export const instant = (ms: number | null) => (ms === null ? null : new Date(ms));

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
    id: row.id,
    taskId: row.task_id,
    taskName: row.task_name,
    namespace: splitQualifiedName(row.task_name).namespace,
    scheduledFor: new Date(row.scheduled_ms),
    fireAt: new Date(row.fire_ms),
    trigger: row.trigger,
    status: 'running',
    skipReason: null,
    attempt: row.attempt,
    attemptId: row.attempt_id,
    taskVersion: row.task_version,
    exclusive: row.exclusive,
    workerId: row.worker_id,
    queuedAt: instant(row.queued_ms),
    startedAt,
    heartbeatAt: startedAt,
    leaseUntil: new Date(row.lease_ms),
    finishedAt: null,
    nextAttemptAt: null,
    error: row.error,
    result: null,
    payload: row.payload === null ? null : (JSON.parse(row.payload) as Prisma.JsonValue),
    pinnedDefinition: row.pinned_definition === null ? null : (JSON.parse(row.pinned_definition) as Prisma.JsonValue),
    concurrencyKey: row.concurrency_key,
    rateKey: row.rate_key,
    heldAt: null,
    // Recorded by the flow-controlled claim's end, after the row came back: not known here.
    quotaNamespace: null,
    flowWaitedMs: null,
    parkedAt: null,
    waitedOn: false,
    // What a catch-up stands in for explains its slots on the timeline; a run does not need it.
    coversFrom: null,
    createdAt: new Date(row.created_ms),
  };
}

/** What a claim is judged by, from a row of CLAIM_READ and the task's definition (kept or parsed). */
export function claimReadOf(row: ReadRow, task: Task | null): ClaimRead {
  return {
    execution: {
      id: row.id,
      taskId: row.task_id,
      taskName: row.task_name,
      status: row.status,
      attempt: row.attempt,
      attemptId: row.attempt_id,
      trigger: row.trigger,
      exclusive: row.exclusive,
      taskVersion: row.task_version,
      pinned: row.pinned,
      pinnedHandler: row.pinned_handler,
      pinnedMaxAttempts: row.pinned_max_attempts,
      scheduledFor: new Date(row.scheduled_ms),
      fireAt: new Date(row.fire_ms),
      leaseUntil: instant(row.lease_ms),
      nextAttemptAt: instant(row.next_attempt_ms),
      heldAt: instant(row.held_ms),
    },
    task,
    runsInProgress: row.runs_in_progress.map((h) => ({
      id: h.id,
      running: h.running,
      fireAt: new Date(h.fireAt),
      firstStartedAt: new Date(h.firstStartedAt),
      releasedAt: h.releasedAt === null ? null : new Date(h.releasedAt),
    })),
    earlierDue: row.earlier_due,
    otherBuffered: row.other_buffered,
    previousSlotAt: instant(row.previous_slot_ms),
    quota: row.quota,
    now: new Date(row.now_ms),
  };
}

/** A row of CLAIM_WRITE: the request, whether its row was locked by another transaction, and the attempt if it started. */
export type WriteRow = ClaimedRow & {
  request_id: string;
  request_attempt_id: string;
  row_locked: boolean;
  claimed: boolean;
  /** Not started because a claim of another slot of its task holds the overlap guard. */
  contended: boolean;
};
