import type { TraceContext } from '@punctual/tracing';
import type { JobsOptions } from 'bullmq';

/** The one queue executions run through. */
export const EXECUTIONS_QUEUE = 'executions';

/** A job carries only the execution id: Postgres holds the truth (and the payload, which may be secret). */
export interface ExecutionJobData {
  executionId: string;
  /**
   * The slot's `fire_at` (epoch ms) when the job was pushed ahead of it (FIRE_LEAD_MS): the worker
   * holds the job until then. Absent on retries and re-enqueued jobs, which run at once.
   */
  fireAt?: number;
  /**
   * When the leader pushed the job (epoch ms, the cluster's clock): the row is marked `queued` a
   * moment later, so a claim before that takes the release instant from here. Absent on retries
   * and re-enqueued jobs, whose rows are already marked.
   */
  releasedAt?: number;
  /**
   * W3C trace context of the span that queued the job (a fire chunk, a failed attempt): the
   * attempt's span continues that trace. Absent when tracing is off.
   */
  trace?: TraceContext;
}

/** The BullMQ job id of an execution's attempt: the execution id for the first, suffixed after. */
export function executionJobId(executionId: string, attempt = 1): string {
  return attempt <= 1 ? executionId : `${executionId}-a${attempt}`;
}

/**
 * Retries are decided by Punctual (the execution row), not by BullMQ, so a job is tried once.
 * Finished jobs are dropped quickly: history lives in Postgres.
 */
export const EXECUTION_JOB_OPTIONS: JobsOptions = {
  attempts: 1,
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
};

/** Pub/sub channel (under the Redis prefix) telling workers to abort a running execution. */
export const EXECUTION_CANCEL_CHANNEL = 'executions:cancel';
/**
 * Pub/sub channel (under the prefix) on which a worker names a flow-control key when a run of it
 * ends, or a held one starts and leaves room: every worker brings its first run held on the key forward. A word
 * lost (Redis down) only slows the held runs down: they ask again on their own.
 */
export const FLOW_WAKE_CHANNEL = 'flow:wake';

/** Pub/sub channel (under the Redis prefix) on which the API announces task changes to the leader. */
export const TASKS_CHANGED_CHANNEL = 'tasks-changed';
