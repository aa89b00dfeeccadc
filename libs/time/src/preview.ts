import { compileSchedule, slotsBetween } from './schedule.js';
import type { ScheduleSpec } from './schedule-spec.js';
import { formatLocal } from './zone.js';

/** The most fire times one preview returns (DESIGN §7: `count ≤ 1000`). */
export const PREVIEW_LIMIT = 1_000;

/**
 * The first `count` fire times at or after `from` (at most {@link PREVIEW_LIMIT}): `at` in UTC
 * (`2026-03-29T07:00:00.000Z`) and `local` with the schedule zone's offset
 * (`2026-03-29T09:00:00.000+02:00`). `at` and `every` schedules show local times in their
 * `timezone`, or UTC. Computed by the same code the scheduler plans with.
 */
export function previewFireTimes(spec: ScheduleSpec, from: Date, count: number): { at: string; local: string }[] {
  const zone = spec.timezone ?? 'UTC';
  const limit = Math.max(0, Math.min(Math.floor(count), PREVIEW_LIMIT));
  const slots = slotsBetween(compileSchedule(spec), new Date(from.getTime() - 1), new Date(8.64e15), limit);
  return slots.map((slot) => ({ at: slot.toISOString(), local: formatLocal(slot, zone) }));
}
