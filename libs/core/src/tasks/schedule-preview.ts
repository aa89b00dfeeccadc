import type { ScheduleSpec as ScheduleInput } from '@punctual/contract';
import { previewFireTimes } from '@punctual/time';
import { scheduleSpecFromInput } from './task-definition.js';

/**
 * The next `count` fire times of a schedule as the API receives it, from `from` on: the time
 * library's preview of the spec the task would be created with (`hashKey` stands in for the name).
 */
export function previewSchedule(schedule: ScheduleInput, from: Date, count: number, hashKey = 'preview'): { at: string; local: string }[] {
  return previewFireTimes(scheduleSpecFromInput(schedule, hashKey, from).spec, from, count);
}
