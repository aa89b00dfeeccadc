import type { SkipReason, Task, TaskExecution } from '@punctual/db';

/** What a job that comes back waits for: a run of its task to end here, or a flow-control key to move. */
export type WaitsFor = { taskId: string } | { flowKey: string; order: string };

/** How an attempt that ran ended here. */
export type RunOutcome = 'succeeded' | 'retrying' | 'dead' | 'cancelled' | 'released' | 'stale';

/**
 * What becomes of a job and its execution, decided once by the claim (and, for a run, by its end)
 * and applied in one place (the worker's job processor):
 * - `run`: the attempt is this worker's: the execution as claimed, the definition it runs under
 *   (the task at the version claimed, with an edit's pin over it), and until when its lease holds
 *   at least, on this process's monotonic clock (`performance.now()`).
 * - `ended`: the attempt ran and its outcome is recorded. The job ends.
 * - `parked`: not its turn: it waits in Postgres and the end of the run ahead hands it its turn
 *   (with a job of its own). The job ends — it never goes round the queue for its turn.
 * - `skipped`: the slot ended `skipped` without starting. The job ends.
 * - `dropped`: nothing to do (finished, another worker's, the worker stopping). The job ends.
 * - `later`: the job comes back after `afterMs` (unset: the worker's own backoff), earlier when
 *   what it `waitsFor` moves here: a few milliseconds early, late (the leader's misfire policy
 *   decides it), Postgres unreachable, a run released late ahead of it, or held by flow control.
 * - `moved`: the run's handler is not this queue's (an edit changed the task's handler after the
 *   job was pushed): the job moves to the queue of `handler`, where a worker that offers it takes it
 *   (or, while none does, it waits). This job ends.
 */
export type Disposition =
  | { kind: 'run'; execution: TaskExecution; task: Task; leaseValidUntil: number }
  | { kind: 'ended'; outcome: RunOutcome }
  | { kind: 'parked' }
  | { kind: 'skipped'; reason: SkipReason }
  | { kind: 'dropped'; why: 'lost' | 'released' }
  | {
      kind: 'later';
      why: 'early' | 'late' | 'unreachable' | 'allowance' | 'held' | 'contended';
      afterMs?: number;
      waitsFor?: WaitsFor;
    }
  | { kind: 'moved'; handler: string; attempt: number };

/** A claim of an attempt: the job's execution and the attempt's fencing token. */
export interface ClaimRequest {
  id: string;
  /** The fencing token of the attempt, made by the worker. */
  attemptId: string;
  workerId: string;
  /** When the leader released the job (epoch ms, the cluster's clock), as the job says. */
  releasedAt?: number;
  /** The execution's task, as the job says (its kept definition need not come back). */
  taskId?: string;
}
