import type { TraceContext } from '@punctual/tracing';
import type { JobsOptions } from 'bullmq';

/**
 * Executions run through a queue per handler, `executions.<handler>` (`executions.http`,
 * `executions.send-report`): a worker takes jobs only from the queues of the handlers it offers,
 * so a run goes only to a worker that can run it — none is taken and sent back by one that cannot.
 * The queue is chosen when the job is pushed, by the handler the run runs (its pinned definition's,
 * else its task's).
 */
export const EXECUTIONS_QUEUE_PREFIX = 'executions.';

/** The name of every execution job (a run, a group of runs, a turn): BullMQ's job name, one for all. */
export const EXECUTION_JOB = 'execution';

/** The queue of the runs of `handler`. */
export function executionsQueueName(handler: string): string {
  return `${EXECUTIONS_QUEUE_PREFIX}${handler}`;
}

/** The handler whose queue `queueName` is (see {@link executionsQueueName}); null for another queue. */
export function handlerOfQueue(queueName: string): string | null {
  return queueName.startsWith(EXECUTIONS_QUEUE_PREFIX) ? queueName.slice(EXECUTIONS_QUEUE_PREFIX.length) : null;
}

/** A job carries only the execution id: Postgres holds the truth (and the payload, which may be secret). */
export interface ExecutionJobData {
  executionId: string;
  /**
   * The execution's task, when the producer knew it: the worker then tells its claim which version
   * of the task's definition it keeps, and gets the definition back only when it moved on.
   */
  taskId?: string;
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
  /**
   * A fire group: several executions due at the same instant in one job (their first is
   * `executionId`), each claimed and fenced on its own row as a job of its own would be. Absent on
   * a job of one execution.
   */
  group?: { executionId: string; taskId?: string }[];
  /**
   * `flow:<key>` when a key's room woke this job: if it then does not take the room, whichever
   * worker took it wakes the key's next waiter. Cleared when the job waits again.
   */
  wokenFor?: string;
}

/**
 * The job of a fire group (see ExecutionJobData.group): named by the instant and its first
 * execution — the same group fired again (a leader adopting what its predecessor fired) is not added twice.
 */
export function groupJobId(fireAtMs: number, firstExecutionId: string): string {
  return `g${fireAtMs}-${firstExecutionId}`;
}

/**
 * The Redis hash (under the queue's keys) that names, per execution of the fire groups of one
 * instant, the group job it rides in: the relay looks there before it pushes a job again for an
 * execution whose own job it does not find.
 */
export const groupsKey = (fireAtMs: number): string => `groups:${fireAtMs}`;

/** The BullMQ job id of an execution's attempt: the execution id for the first, suffixed after. */
export function executionJobId(executionId: string, attempt = 1): string {
  return attempt <= 1 ? executionId : `${executionId}-a${attempt}`;
}

/**
 * Retries are decided by Punctual (the execution row), not by BullMQ, so a job is tried once. A
 * finished job is dropped at once — history lives in Postgres, and a queue that keeps finished
 * jobs trims them on every completion — except a failed one (an error the worker could not turn
 * into an outcome), kept a day for Bull Board; the relay tells a finished job from a live one.
 */
export const EXECUTION_JOB_OPTIONS: JobsOptions = {
  attempts: 1,
  removeOnComplete: true,
  removeOnFail: { age: 24 * 3600, count: 5000 },
};

/**
 * The job of a slot handed its turn (see TurnsRepository): its own id — the job the slot had when
 * it was parked may not have finished yet — named by the instant of the hand-over (µs).
 */
export function turnJobId(executionId: string, attempt: number, handedMs: number): string {
  return `${executionJobId(executionId, attempt)}-t${Math.round(handedMs * 1000)}`;
}

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

/** Tasks named in one message at most; a change of more asks the leader to look at every planned row due. */
const NAMED_TASKS_MAX = 100;

/**
 * A change's word to the leader: plan now, and fire the rows the API inserted for these tasks
 * (`all`: every planned row due, as when too many are named). Empty: nothing was inserted.
 */
export function tasksChangedMessage(inserted: readonly string[] | 'all'): string {
  return inserted === 'all' || inserted.length > NAMED_TASKS_MAX ? '*' : inserted.join(',');
}

/** The tasks a change's word names (see {@link tasksChangedMessage}); `all` for `*` and for an older scheduler's `1`. */
export function tasksChangedBy(message: string): string[] | 'all' {
  if (message === '*' || message === '1') return 'all';
  return message === '' ? [] : message.split(',');
}

/**
 * The directory of live workers in Redis: each worker keeps an entry under
 * `<prefix>:<WORKERS_KEY>:<instance>` (written by the worker's `WorkerAnnouncer`, read by the
 * cluster's `WorkerDirectory`), which lives `WORKER_ENTRY_TTL_S` without a refresh.
 */
export const WORKERS_KEY = 'workers';
export const WORKER_ENTRY_TTL_S = 45;

/** A worker's entry in the directory: the handlers it offers, its handler slots, when it last said so. */
export interface WorkerEntry {
  handlers: string[];
  concurrency: number;
  at: string;
}
