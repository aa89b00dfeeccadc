import type { DstPolicy } from './dst-policy.js';

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

/**
 * A calendar of excluded days as a schedule applies it (DESIGN §6 "Calendars"): a slot is dropped
 * when its local date in `timezone` is one of `dates` (`2026-12-25`) or an occurrence of one of
 * `rrules` — day rules such as `FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25` or `FREQ=WEEKLY;BYDAY=SA,SU`,
 * counted from 1970-01-01 (no DTSTART, no COUNT, nothing finer than a day).
 */
export interface ExcludedDays {
  /** Identifies this content (the calendar's name and version): compiled once per key and zone. */
  key: string;
  timezone: string;
  dates: readonly string[];
  rrules: readonly string[];
}
