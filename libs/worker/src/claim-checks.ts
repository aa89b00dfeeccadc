import type { SkipReason, Task, TaskExecution } from '@punctual/db';

/** Clock skew between a leader and a worker tolerated on top of the lead before a hold is cut short. */
const MAX_CLOCK_SKEW_MS = 250;

/**
 * How long a job pushed ahead of its slot waits before its claim: until `fireAt`, never longer
 * than the lead plus {@link MAX_CLOCK_SKEW_MS} (a worker clock far behind the leader's must not
 * park the job), and not at all for jobs without a `fireAt` (retries, re-enqueued jobs). `now` is
 * the cluster's clock (Postgres'), as `fireAt` is.
 */
export function holdBeforeSlotMs(fireAt: number | undefined, now: number, leadMs: number): number {
  if (fireAt === undefined) return 0;
  return Math.min(Math.max(0, fireAt - now), leadMs + MAX_CLOCK_SKEW_MS);
}

/**
 * Why a claimed execution must not run, or null. Only a first attempt is judged: once a slot has
 * started, its retries finish it (only a delete, a cancel or a pause with cancel stop them).
 * - the task was deleted;
 * - the task is paused (a manual run goes ahead);
 * - the row was planned under a definition the task no longer has and was not re-planned by the
 *   edit (an edit re-plans or withdraws every row that has not started, and pins the ones in
 *   progress, so this is a row that slipped past it);
 * - a scheduled slot starting after `fire_at + maxDelay`: late. Catch-up, manual and backfill runs
 *   exist because their slot is already past: the misfire policy decided, they are never late.
 */
export function skipReasonAtClaim(execution: TaskExecution, task: Task | null, now: Date): SkipReason | null {
  if (!task) return 'task_deleted';
  if (execution.attempt !== 1 || execution.trigger === 'manual') return null;
  if (task.status === 'paused') return 'paused';
  if (execution.pinnedDefinition === null && execution.taskVersion !== task.planVersion) return 'task_changed';
  if (execution.trigger === 'schedule' && now.getTime() > execution.fireAt.getTime() + task.maxDelayMs) return 'late';
  return null;
}
