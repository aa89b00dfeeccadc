import rrulePkg, { type Options } from 'rrule';
import { InvalidScheduleError } from './errors.js';
import type { ExcludedDays, Schedule } from './schedule-spec.js';
import { instantsOfWall } from './wall-time.js';
import { assertTimeZone } from './zone.js';
import { wallOf } from './zone-timeline.js';

const { RRule, Frequency } = rrulePkg;

const DAY = 86_400_000;
/** Where a day rule counts from (its INTERVAL, its weeks): 1970-01-01, a Thursday. */
const RULE_EPOCH = new Date(0);
/**
 * Consecutive excluded days a schedule looks past for its next slot before it answers "no more
 * slots": ten years (a calendar that excludes every day would otherwise be searched forever).
 */
const MAX_SKIPPED_DAYS = 3_660;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_FREQUENCIES = new Set<number>([Frequency.YEARLY, Frequency.MONTHLY, Frequency.WEEKLY, Frequency.DAILY]);

/** A calendar compiled: whether a local date (days since 1970-01-01) is excluded. */
interface DaySet {
  timezone: string;
  has(day: number): boolean;
}

const compiled = new Map<string, DaySet>();
const CACHE_LIMIT = 10_000;

/**
 * Checks a calendar's fields, throwing {@link InvalidScheduleError} with the path of the first bad
 * one (`dates[2]`, `rrules[0]`, `timezone`). The API calls it before storing a calendar.
 */
export function checkExcludedDays(days: Omit<ExcludedDays, 'key'>): void {
  compileDays({ ...days, key: '' });
}

/**
 * Every local date of `year` a calendar excludes (`2026-12-25`, in date order): its dates and its
 * rules' days, as a schedule excluding it skips them (local dates: the zone does not move them).
 */
export function excludedDatesOfYear(days: Omit<ExcludedDays, 'key'>, year: number): string[] {
  const set = compileDays({ ...days, key: '' });
  const dates: string[] = [];
  for (let day = Date.UTC(year, 0, 1) / DAY; day < Date.UTC(year + 1, 0, 1) / DAY; day += 1) {
    if (set.has(day)) dates.push(new Date(day * DAY).toISOString().slice(0, 10));
  }
  return dates;
}

/** `schedule` without the slots whose local date one of `calendars` excludes. */
export function excludingDays(schedule: Schedule, calendars: readonly ExcludedDays[]): Schedule {
  if (calendars.length === 0) return schedule;
  const sets = calendars.map(memoised);
  /** The end of the excluded stretch `at` lies in (the first instant of the next local day), or null. */
  const excludedUntil = (at: number): number | null => {
    let end: number | null = null;
    for (const set of sets) {
      const day = dayOf(at, set.timezone);
      if (set.has(day)) end = Math.max(end ?? -Infinity, startOfDay(day + 1, set.timezone));
    }
    return end;
  };
  const count = schedule.count?.bind(schedule);
  return {
    next(after) {
      let slot = schedule.next(after);
      for (let skipped = 0; slot; skipped += 1) {
        const end = excludedUntil(slot.getTime());
        if (end === null) return slot;
        if (skipped >= MAX_SKIPPED_DAYS) return null;
        slot = schedule.next(new Date(end - 1));
      }
      return null;
    },
    // The inner schedule's count, less its slots on the excluded days of the span: the cost grows
    // with the days of the span, not with its slots (an every-second task down for a week).
    count:
      count &&
      ((after, until) => {
        let n = count(after, until);
        for (const [from, to] of excludedStretches(sets, after.getTime(), until.getTime()))
          n -= count(new Date(from), new Date(to));
        return n;
      }),
  };
}

/** The excluded stretches of `sets` within `(after, until]`, merged, each as `(from, to]`. */
function excludedStretches(sets: DaySet[], after: number, until: number): [number, number][] {
  const stretches: [number, number][] = [];
  for (const set of sets) {
    for (let day = dayOf(after, set.timezone); day <= dayOf(until, set.timezone); day += 1) {
      if (set.has(day)) stretches.push([startOfDay(day, set.timezone) - 1, startOfDay(day + 1, set.timezone) - 1]);
    }
  }
  stretches.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [from, to] of stretches) {
    const last = merged[merged.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged
    .map(([from, to]) => [Math.max(from, after), Math.min(to, until)] as [number, number])
    .filter(([from, to]) => to > from);
}

/** The local date of `at` in `zone`, as days since 1970-01-01. */
function dayOf(at: number, zone: string): number {
  return Math.floor(wallOf(at, zone) / DAY);
}

/** The first instant of local date `day` in `zone` (the end of the gap when midnight does not exist). */
function startOfDay(day: number, zone: string): number {
  const mapping = instantsOfWall(day * DAY, zone);
  return mapping.instants[0] ?? mapping.gap!.end;
}

function memoised(days: ExcludedDays): DaySet {
  const key = `${days.key}\u0000${days.timezone}`;
  let set = compiled.get(key);
  if (!set) {
    set = compileDays(days);
    if (compiled.size >= CACHE_LIMIT) compiled.clear();
    compiled.set(key, set);
  }
  return set;
}

function compileDays(days: ExcludedDays): DaySet {
  assertTimeZone(days.timezone, 'timezone');
  const dates = new Set(days.dates.map((d, i) => dayNumber(d, `dates[${i}]`)));
  const rules = days.rrules.map((text, i) => dayRule(text, `rrules[${i}]`));
  // The rules' occurrences, a year at a time (the rrule package walks from its start on each call).
  const years = new Map<number, Set<number>>();
  const ruleDays = (year: number) => {
    let set = years.get(year);
    if (!set) {
      set = new Set();
      const [from, to] = [new Date(Date.UTC(year, 0, 1)), new Date(Date.UTC(year + 1, 0, 1) - 1)];
      for (const rule of rules) for (const d of rule.between(from, to, true)) set.add(Math.floor(d.getTime() / DAY));
      years.set(year, set);
    }
    return set;
  };
  return {
    timezone: days.timezone,
    has: (day) => dates.has(day) || (rules.length > 0 && ruleDays(new Date(day * DAY).getUTCFullYear()).has(day)),
  };
}

function dayNumber(text: string, field: string): number {
  const match = typeof text === 'string' ? DATE.exec(text) : null;
  const ms = match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : NaN;
  // Date.UTC rolls 2026-02-30 over to March: a date must survive the round trip.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text)
    throw new InvalidScheduleError(field, `${field} must be a date such as 2026-12-25, got "${text}"`);
  return ms / DAY;
}

function dayRule(text: string, field: string): InstanceType<typeof RRule> {
  let options: Partial<Options>;
  try {
    options = RRule.parseString(String(text).replace(/^RRULE:/i, ''));
  } catch {
    throw new InvalidScheduleError(field, `${field} must be a day rule such as "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25"`);
  }
  const refuse = (why: string) => new InvalidScheduleError(field, `${field} ${why}`);
  if (options.freq === undefined || !DAY_FREQUENCIES.has(options.freq))
    throw refuse('must repeat YEARLY, MONTHLY, WEEKLY or DAILY');
  if (options.dtstart || options.count != null)
    throw refuse('takes no DTSTART or COUNT: a day rule counts from 1970-01-01 (bound it with UNTIL)');
  if (options.byhour != null || options.byminute != null || options.bysecond != null)
    throw refuse('excludes whole days: BYHOUR, BYMINUTE and BYSECOND have no meaning here');
  return new RRule({ ...options, dtstart: RULE_EPOCH, tzid: null });
}
