import type { MISFIRE_POLICIES, OVERLAP_POLICIES } from '@punctual/contract';
import { countSlots, jitterOffset, latestSlots, type Schedule } from '@punctual/time';
import { isLate } from './lateness.js';
import type { CursorAdvance, PlannedExecution } from './planned-execution.js';
import { isExclusive } from './policy.js';

export interface SlotPlannerOptions {
  lookaheadMs: number;
  /** At most this many late slots are run (`run_all`) or written as `missed` rows per task. */
  catchupMax: number;
  /** Slots examined per task per pass; a longer backlog continues on the next pass. */
  maxSlotsPerPass: number;
  /** The id of the execution of `slot` (`executionIdFor`: a UUIDv7 carrying the slot). */
  newId: (slot: Date) => string;
}

export interface TaskSlotPlan {
  executions: PlannedExecution[];
  advance: CursorAdvance;
  /** Slots examined (the planner's budget counts them). */
  examined: number;
}

/** The task fields slot planning reads. */
export interface PlannableTask {
  id: string;
  name: string;
  planVersion: number;
  overlap: (typeof OVERLAP_POLICIES)[number];
  misfire: (typeof MISFIRE_POLICIES)[number];
  maxDelayMs: number;
  jitterMs: number;
  handler: string;
  /** The cursor: the first slot not yet planned. */
  nextRunAt: Date | null;
  /** A run limit (`schedule.remainingRuns`): the slots still to plan to run; null or absent: none. */
  remainingRuns?: number | null;
}

/**
 * Decides what to record for one task's due slots: every slot in `[cursor, now + lookahead]`,
 * walked **from the cursor** (never from now, so nothing between the two is skipped).
 *
 * A slot is late when it can no longer start within `maxDelay` of its `fire_at` (see `isLate`).
 * Late slots follow the misfire policy: `run_once` runs the most recent one now (`catchup`) and
 * records the rest as `missed`; `skip` records all as `missed`; `run_all` runs them, in slot order.
 * Only the most recent `catchupMax` late slots become rows; older ones are only counted in
 * `missed`. However long the backlog (an every-second task paused for a week), it costs the same:
 * the slots that are late whatever their jitter are counted without being visited and the latest
 * `catchupMax` of them found directly (see `countSlots`, `latestSlots`); the walk resumes after them.
 * A backlog longer than one pass's walk writes its rows only in the pass that reaches its end
 * (earlier passes only count): however long the outage, a task gets at most `catchupMax` rows for it.
 */
export function planTaskSlots(
  task: PlannableTask,
  schedule: Schedule,
  now: Date,
  options: SlotPlannerOptions,
): TaskSlotPlan {
  const horizon = now.getTime() + options.lookaheadMs;
  const executions: PlannedExecution[] = [];
  const late: Date[] = [];
  let droppedLate = 0;
  let lastScheduledFor: Date | null = null;
  let cursor: Date | null = task.nextRunAt;
  let examined = 0;

  const row = (
    slot: Date,
    fireAt: Date,
    status: PlannedExecution['status'],
    trigger: PlannedExecution['trigger'],
  ): PlannedExecution => ({
    id: options.newId(slot),
    taskId: task.id,
    taskName: task.name,
    scheduledFor: slot,
    fireAt,
    trigger,
    status,
    taskVersion: task.planVersion,
    exclusive: isExclusive(task.overlap),
    handler: task.handler,
  });
  const fireAtOf = (slot: Date) => new Date(slot.getTime() + jitterOffset(task.id, slot, task.jitterMs));

  // Slots up to here are late whatever their jitter (it only ever delays a slot, by less than jitterMs).
  const surelyLate = new Date(now.getTime() - task.maxDelayMs - Math.max(1, task.jitterMs));
  if (cursor && cursor.getTime() <= surelyLate.getTime()) {
    const since = new Date(cursor.getTime() - 1);
    const backlog = countSlots(schedule, since, surelyLate);
    if (backlog > options.catchupMax) {
      late.push(...latestSlots(schedule, since, surelyLate, options.catchupMax));
      droppedLate = backlog - late.length;
      examined += late.length;
      lastScheduledFor = late.at(-1) ?? null;
      cursor = schedule.next(surelyLate);
    }
  }

  while (cursor && cursor.getTime() <= horizon && examined < options.maxSlotsPerPass) {
    const slot: Date = cursor;
    examined += 1;
    const fireAt = fireAtOf(slot);
    if (isLate(fireAt, task.maxDelayMs, now)) {
      late.push(slot);
      if (late.length > options.catchupMax) {
        late.shift();
        droppedLate += 1;
      }
    } else {
      executions.push(row(slot, fireAt, 'scheduled', 'schedule'));
    }
    lastScheduledFor = slot;
    cursor = schedule.next(slot);
  }

  // The backlog continues past this pass: the most recent late slots are still ahead, so these
  // are only counted; the pass that reaches the backlog's end writes its rows.
  const backlogContinues = cursor !== null && isLate(fireAtOf(cursor), task.maxDelayMs, now);
  let missed = droppedLate;
  if (backlogContinues) {
    missed += late.length;
    late.length = 0;
  }
  let catchups = 0;
  // The late slots of this pass begin at the cursor it started from (those counted only, too).
  const backlogFrom = task.nextRunAt;
  late.forEach((slot, index) => {
    const mostRecent = index === late.length - 1;
    if (task.misfire === 'run_all' || (task.misfire === 'run_once' && mostRecent)) {
      // One millisecond apart: the timer and the queue take them in slot order. The first catch-up
      // of the pass stands in for the late slots before it, the ones only counted too (under
      // run_once the one catch-up for all of them); under run_all each other one for its own slot.
      const covers = catchups === 0 ? (backlogFrom ?? slot) : slot;
      executions.push({
        ...row(slot, new Date(now.getTime() + catchups), 'scheduled', 'catchup'),
        coversFrom: covers.getTime() <= slot.getTime() ? covers : slot,
      });
      catchups += 1;
    } else {
      // The first missed row of the pass stands for the late slots before it that were only counted
      // (the timeline explains them by it, whatever a backfill later makes of the row itself).
      const covers = missed === droppedLate && backlogFrom !== null && backlogFrom.getTime() < slot.getTime();
      executions.push({ ...row(slot, slot, 'missed', 'schedule'), ...(covers && { coversFrom: backlogFrom }) });
      missed += 1;
    }
  });
  executions.sort((a, b) => a.scheduledFor.getTime() - b.scheduledFor.getTime());

  // A run limit: the first `remainingRuns` runs are planned, and once it is spent the schedule ends.
  const limit = task.remainingRuns ?? null;
  let runs = executions.filter((e) => e.status === 'scheduled').length;
  if (limit !== null && runs >= limit) {
    let kept = 0;
    const within = executions.filter((e) => e.status !== 'scheduled' || (kept += 1) <= limit);
    executions.length = 0;
    executions.push(...within);
    runs = limit;
    cursor = null;
    // The last slot is the last one planned: the limit dropped the ones after it.
    lastScheduledFor = within.at(-1)?.scheduledFor ?? lastScheduledFor;
  }
  return { executions, advance: { id: task.id, nextRunAt: cursor, lastScheduledFor, missed, runs }, examined };
}
