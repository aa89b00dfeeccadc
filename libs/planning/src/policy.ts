import { type OVERLAP_POLICIES, PLANNED_EXECUTION_STATUSES } from '@punctual/contract';

/**
 * Whether the runs of a task under this overlap policy exclude one another — every policy but
 * `allow`. Its executions are planned `exclusive`, and only those are judged by the policy and
 * hold the task's turn (DESIGN §2, §5).
 */
export function isExclusive(overlap: (typeof OVERLAP_POLICIES)[number]): boolean {
  return overlap !== 'allow';
}

/**
 * Whether an execution that has spent `attempt` attempts (its handler started that many times) may
 * have another under a policy of `maxAttempts`: a failure then retries, a lease taken over runs
 * again; otherwise the execution ends `dead`.
 */
export function attemptsRemain(attempt: number, maxAttempts: number): boolean {
  return attempt < maxAttempts;
}

/** A row planned (`scheduled`) or handed to the queue (`queued`): its first attempt has not begun. */
export function isPlanned(status: string): boolean {
  return (PLANNED_EXECUTION_STATUSES as readonly string[]).includes(status);
}

/** What a slot's claim knows of the rest of its task (see {@link taskIsFree}). */
export interface TaskSlotRow {
  id: string;
  status: string;
  exclusive: boolean;
  fireAt: Date;
  scheduledFor: Date;
}

/**
 * The runs of `slot`'s task that hold its turn: its other exclusive executions `running` or
 * `retrying` (a slot between attempts still holds its task, DESIGN §4).
 */
export function runsAhead<R extends TaskSlotRow>(slot: TaskSlotRow, rows: readonly R[]): R[] {
  return rows.filter((r) => r.id !== slot.id && r.exclusive && (r.status === 'running' || r.status === 'retrying'));
}

/** Whether an earlier exclusive slot of the task is due by `now` and has not begun: `slot` waits behind it. */
export function earlierSlotDue(slot: TaskSlotRow, rows: readonly TaskSlotRow[], now: Date): boolean {
  return rows.some(
    (o) =>
      isPlanned(o.status) &&
      o.exclusive &&
      o.fireAt.getTime() <= now.getTime() &&
      o.scheduledFor.getTime() < slot.scheduledFor.getTime(),
  );
}

/**
 * Whether `slot`'s task is free for it to start: no run holds its turn and no earlier slot is due —
 * what the claim's judgement (`judgeClaim`) decides from the runsInProgress and `earlierDue` it reads.
 */
export function taskIsFree(context: { runsInProgress: readonly unknown[]; earlierDue: boolean }): boolean {
  return context.runsInProgress.length === 0 && !context.earlierDue;
}
