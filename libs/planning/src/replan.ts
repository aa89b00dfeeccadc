import { jitterOffset, type Schedule } from '@punctual/time';
import { isExclusive } from './policy.js';
import type { PlannableTask } from './slot-planner.js';
import type { Trigger } from './planned-execution.js';

/** An execution of a task that has not started: what an edit decides about. */
export interface UnstartedSlot {
  id: string;
  scheduledFor: Date;
  fireAt: Date;
  trigger: Trigger;
}

/** A row kept under the task's new definition. */
export interface KeptSlot {
  id: string;
  fireAt: Date;
  taskVersion: number;
  exclusive: boolean;
}

export interface ReplanDecision {
  /** Rows that stay, under the new definition (its version, overlap policy and, for moved slots, jitter). */
  keep: KeptSlot[];
  /** Rows of slots that have not come and that the new schedule does not have. */
  withdraw: string[];
}

/**
 * What an edit does to a task's executions that have not started. A change takes effect from the
 * moment it is made (`now`):
 * - a row whose slot has come, or that is not a scheduled slot (a catch-up, manual or backfill run),
 *   stays and runs under the new definition;
 * - a scheduled slot still to come stays when the new schedule has the same slot (it runs once,
 *   under the new definition: its row is reused, so the unique `(task_id, scheduled_for)` cannot
 *   turn the re-plan into a lost slot), and is withdrawn when the new schedule does not.
 * `schedule` is the new schedule, or null when the edit left the schedule as it was.
 */
export function replanUnstarted(
  rows: UnstartedSlot[],
  now: Date,
  task: Pick<PlannableTask, 'id' | 'planVersion' | 'overlap' | 'jitterMs'>,
  schedule: Schedule | null,
): ReplanDecision {
  const decision: ReplanDecision = { keep: [], withdraw: [] };
  const keep = (row: UnstartedSlot, fireAt: Date) =>
    decision.keep.push({ id: row.id, fireAt, taskVersion: task.planVersion, exclusive: isExclusive(task.overlap) });
  for (const row of rows) {
    const slot = row.scheduledFor;
    if (schedule === null || row.trigger !== 'schedule' || slot.getTime() <= now.getTime()) {
      keep(row, row.fireAt);
    } else if (schedule.next(new Date(slot.getTime() - 1))?.getTime() === slot.getTime()) {
      keep(row, new Date(slot.getTime() + jitterOffset(task.id, slot, task.jitterMs)));
    } else {
      decision.withdraw.push(row.id);
    }
  }
  return decision;
}
