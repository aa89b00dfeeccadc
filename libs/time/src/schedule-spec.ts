import type { DstPolicy } from './dst-policy.js';
import type { ExcludedDays } from './excluded-days.js';

export interface ScheduleBounds {
  /** No slot before this instant (inclusive bound). */
  startAt?: Date | null;
  /** No slot after this instant (inclusive bound). */
  endAt?: Date | null;
  /** No slot on a local date one of these calendars excludes. */
  exclude?: readonly ExcludedDays[];
}

/**
 * What to compile. `hashKey` (the task name) fixes `H` in cron; `anchor` is where `every` counts
 * from and the default DTSTART of an rrule. `timezone` on `at`/`every` only affects how previews
 * show local times — their slots are instants.
 */
export type ScheduleSpec =
  | ({ kind: 'cron'; cron: string; timezone: string; hashKey?: string; dst?: DstPolicy | null } & ScheduleBounds)
  | ({ kind: 'rrule'; rrule: string; timezone: string; anchor?: Date; dst?: DstPolicy | null } & ScheduleBounds)
  | ({ kind: 'at'; runAt: Date; timezone?: string } & ScheduleBounds)
  | ({ kind: 'every'; everyMs: number; anchor: Date; timezone?: string } & ScheduleBounds);

/** A compiled schedule: a pure function from an instant to the next slot. */
export interface Schedule {
  /** The first slot strictly after `after`, or `null` when the schedule has no more slots. */
  next(after: Date): Date | null;
  /**
   * How many slots lie in `(after, until]`, exactly, at a cost that does not grow with their
   * number (see `countSlots`, which walks the schedules that cannot).
   */
  count?(after: Date, until: Date): number;
}
