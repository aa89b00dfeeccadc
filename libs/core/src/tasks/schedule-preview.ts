import { compileSchedule, formatLocal, slotsBetween } from '@punctual/time';
import { scheduleSpecFromInput } from './task-definition.js';
import type { ScheduleInput } from './task-input.js';

export const PREVIEW_MAX = 1_000;

/**
 * The next `count` fire times of a schedule after `from`, as UTC instants and as local times in the
 * schedule's zone — computed by the same library the scheduler plans with.
 */
export function previewSchedule(schedule: ScheduleInput, from: Date, count: number, hashKey = 'preview'): { at: string; local: string }[] {
  const { spec } = scheduleSpecFromInput(schedule, hashKey, from);
  const zone = schedule.timezone ?? 'UTC';
  return slotsBetween(compileSchedule(spec), new Date(from.getTime() - 1), new Date(8.64e15), Math.min(count, PREVIEW_MAX)).map((slot) => ({
    at: slot.toISOString(),
    local: formatLocal(slot, zone),
  }));
}
