import { splitQualifiedName } from '@punctual/contract';
import type {
  ExecutionStatus,
  ExecutionTrigger,
  Prisma,
  SkipReason,
  TaskExecution,
} from '../generated/prisma/client.js';

/** A `task_execution` row as raw SQL returns it (snake_case columns). */
export interface ExecutionRow {
  id: string;
  task_id: string | null;
  task_name: string;
  scheduled_for: Date;
  fire_at: Date;
  trigger: ExecutionTrigger;
  status: ExecutionStatus;
  skip_reason: SkipReason | null;
  attempt: number;
  attempt_id: string | null;
  task_version: number;
  exclusive: boolean;
  worker_id: string | null;
  queued_at: Date | null;
  started_at: Date | null;
  heartbeat_at: Date | null;
  lease_until: Date | null;
  finished_at: Date | null;
  next_attempt_at: Date | null;
  error: string | null;
  result: Prisma.JsonValue | null;
  payload: Prisma.JsonValue | null;
  pinned_definition: Prisma.JsonValue | null;
  concurrency_key: string | null;
  rate_key: string | null;
  held_at: Date | null;
  quota_namespace: string | null;
  flow_waited_ms: number | null;
  parked_at: Date | null;
  waited_on: boolean;
  covers_from: Date | null;
  created_at: Date;
}

/** Maps a raw row to the client's model shape, so callers see one type whatever the query. */
export function executionFromRow(row: ExecutionRow): TaskExecution {
  return {
    id: row.id,
    taskId: row.task_id,
    taskName: row.task_name,
    namespace: splitQualifiedName(row.task_name).namespace,
    scheduledFor: row.scheduled_for,
    fireAt: row.fire_at,
    trigger: row.trigger,
    status: row.status,
    skipReason: row.skip_reason,
    attempt: row.attempt,
    attemptId: row.attempt_id,
    taskVersion: row.task_version,
    exclusive: row.exclusive,
    workerId: row.worker_id,
    queuedAt: row.queued_at,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    leaseUntil: row.lease_until,
    finishedAt: row.finished_at,
    nextAttemptAt: row.next_attempt_at,
    error: row.error,
    result: row.result,
    payload: row.payload,
    pinnedDefinition: row.pinned_definition,
    concurrencyKey: row.concurrency_key,
    rateKey: row.rate_key,
    heldAt: row.held_at,
    quotaNamespace: row.quota_namespace,
    flowWaitedMs: row.flow_waited_ms,
    parkedAt: row.parked_at,
    waitedOn: row.waited_on,
    coversFrom: row.covers_from ?? null,
    createdAt: row.created_at,
  };
}
