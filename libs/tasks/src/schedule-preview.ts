import { PREVIEW_MAX, type ScheduleSpec as ScheduleInput, TASK_DEFAULTS } from '@punctual/contract';
import type { Calendar, Task } from '@punctual/db';
import { taskSchedule } from '@punctual/planning';
import { compileSchedule, formatLocal, slotsBetween } from '@punctual/time';
import { scheduleSpecFromInput } from './task-definition.js';

/**
 * The first `count` fire times of a schedule as the API receives it, at or after `from` (at most
 * {@link PREVIEW_MAX}), computed by the same code the scheduler plans with, from the spec the task
 * would be created with (`hashKey` stands in for the name): `at` in UTC
 * (`2026-03-29T07:00:00.000Z`) and `local` with the schedule zone's offset
 * (`2026-03-29T09:00:00.000+02:00`), in the schedule's `timezone` (`at` and `every` schedules
 * included). Slots on the days of the `calendars` the schedule excludes are left out.
 */
export function previewSchedule(schedule: ScheduleInput, from: Date, count: number, hashKey = 'preview', calendars: Calendar[] = []): { at: string; local: string }[] {
  const { spec } = scheduleSpecFromInput(schedule, hashKey, from, calendars);
  const zone = spec.timezone ?? TASK_DEFAULTS.timezone;
  const limit = Math.max(0, Math.min(Math.floor(count), PREVIEW_MAX));
  const slots = slotsBetween(compileSchedule(spec), new Date(from.getTime() - 1), new Date(8.64e15), limit);
  return slots.map((slot) => ({ at: slot.toISOString(), local: formatLocal(slot, zone) }));
}

/**
 * The next `count` fire times from the task's cursor (what planning will do next). None for a task
 * whose schedule cannot be computed: its `lastError` says why.
 */
export function upcomingFireTimes(task: Task, count: number): string[] {
  if (task.status !== 'active' || !task.nextRunAt || task.lastError) return [];
  const rest = slotsBetween(taskSchedule(task), task.nextRunAt, new Date(8.64e15), count - 1);
  return [task.nextRunAt, ...rest].map((d) => d.toISOString());
}

