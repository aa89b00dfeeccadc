import { PREVIEW_MAX, type ScheduleSpec as ScheduleInput, TASK_DEFAULTS } from '@punctual/contract';
import type { Calendar, Task } from '@punctual/db';
import { type ScheduledTask, taskSchedule } from '@punctual/planning';
import { compileSchedule, formatLocal, jitterOffset, slotsBetween } from '@punctual/time';
import { scheduleSpecFromInput } from './task-definition.js';

/**
 * The first `count` fire times of a schedule as the API receives it, at or after `from` (at most
 * {@link PREVIEW_MAX}), computed by the same code the scheduler plans with, from the spec the task
 * would be created with (`hashKey` stands in for the name): `at` in UTC
 * (`2026-03-29T07:00:00.000Z`) and `local` with the schedule zone's offset
 * (`2026-03-29T09:00:00.000+02:00`), in the schedule's `timezone` (`at` and `every` schedules
 * included). Slots on the days of the `calendars` the schedule excludes are left out.
 */
export function previewSchedule(
  schedule: ScheduleInput,
  from: Date,
  count: number,
  hashKey = 'preview',
  calendars: Calendar[] = [],
): { at: string; local: string }[] {
  const { spec } = scheduleSpecFromInput(schedule, hashKey, from, calendars);
  const zone = spec.timezone ?? TASK_DEFAULTS.timezone;
  const limit = Math.max(0, Math.min(Math.floor(count), PREVIEW_MAX));
  const slots = slotsBetween(compileSchedule(spec), new Date(from.getTime() - 1), new Date(8.64e15), limit);
  return slots.map((slot) => ({ at: slot.toISOString(), local: formatLocal(slot, zone) }));
}

/** Slots examined past `count` for ones whose jitter still holds them back: a jitter longer than the interval. */
const JITTER_SLOTS_MAX = 10_000;

/**
 * The next `count` slots to fire after `now`, earliest first (a task's `upcoming`): `planned`, the
 * slots of its executions planned and not yet due (read by the caller), then the schedule's slots
 * from the cursor on. A slot counts while its fire time (the slot plus its jitter) is after `now`:
 * the cut the execution lists make, so a slot is never both here and among the due executions.
 * None from the schedule for a task that is not active or whose schedule cannot be computed (its
 * `lastError` says why); a slot already planned still fires and is listed.
 */
export function upcomingFireTimes(
  task: ScheduledTask &
    Pick<Task, 'id' | 'status' | 'nextRunAt' | 'lastError' | 'jitterMs'> & { remainingRuns?: number | null },
  count: number,
  now: Date,
  planned: readonly Date[] = [],
): string[] {
  const times = new Set(planned.map((slot) => slot.getTime()));
  // Under a run limit, the schedule adds no more slots than the runs still to plan.
  const limit =
    task.remainingRuns === null || task.remainingRuns === undefined ? Infinity : times.size + task.remainingRuns;
  if (task.status === 'active' && task.nextRunAt && !task.lastError) {
    const schedule = taskSchedule(task);
    // Behind the cursor the slots are planned — or late, when the planner is behind: of those,
    // only slots that can still fire after now (jitter only delays) are upcoming.
    const earliest = new Date(now.getTime() - task.jitterMs);
    let slot: Date | null = task.nextRunAt > earliest ? task.nextRunAt : schedule.next(earliest);
    for (
      let examined = 0;
      slot && times.size < Math.min(count, limit) && examined < count + JITTER_SLOTS_MAX;
      examined += 1
    ) {
      if (slot.getTime() + jitterOffset(task.id, slot, task.jitterMs) > now.getTime()) times.add(slot.getTime());
      slot = schedule.next(slot);
    }
  }
  return [...times]
    .sort((a, b) => a - b)
    .slice(0, count)
    .map((ms) => new Date(ms).toISOString());
}
