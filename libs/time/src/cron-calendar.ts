import type { CronDays, CronFields } from './cron-fields.js';
import type { WallSource } from './fire-time.js';

const DAY = 86_400_000;
/** The Gregorian calendar repeats every 400 years: a day pattern absent from 4,800 months never occurs. */
const CYCLE_MONTHS = 4_812;
const MASK_CACHE_LIMIT = 4_096;

/**
 * The matching wall times of a cron expression, computed directly from its fields: a bit mask of
 * matching days per month (memoised) and the sorted matching seconds of a day. A query is a
 * mask scan and a binary search — no per-minute stepping, no loop limit, no time zone.
 */
export class CronCalendar implements WallSource {
  /** Matching times of day, in seconds since midnight, ascending. */
  private readonly times: Int32Array;
  private readonly months: Set<number>;
  private readonly masks = new Map<number, number>();

  constructor(private readonly fields: CronFields) {
    const times: number[] = [];
    for (const h of fields.hours)
      for (const m of fields.minutes) for (const s of fields.seconds) times.push(h * 3600 + m * 60 + s);
    this.times = Int32Array.from(times);
    this.months = new Set(fields.months);
  }

  nextWall(wall: number): number | null {
    const t = Math.floor(wall / 1000) * 1000 + 1000;
    const today = Math.floor(t / DAY);
    let second = (t - today * DAY) / 1000;
    let day = this.nextDay(today);
    while (day !== null) {
      if (day !== today) second = 0;
      const i = lowerBound(this.times, second);
      if (i < this.times.length) return day * DAY + this.times[i]! * 1000;
      day = this.nextDay(day + 1);
      second = 0;
    }
    return null;
  }

  /**
   * How many matching wall times lie in `(from, until]` (ms of a UTC-labelled clock): the matching
   * days by their masks, the times of each by binary search — a year costs a few hundred steps,
   * whatever the number of matches.
   */
  countWalls(from: number, until: number): number {
    const lo = Math.floor(from / 1000) * 1000 + 1000;
    const hi = Math.floor(until / 1000) * 1000;
    if (hi < lo) return 0;
    let count = 0;
    const lastDay = Math.floor(hi / DAY);
    for (let day = this.nextDay(Math.floor(lo / DAY)); day !== null && day <= lastDay; day = this.nextDay(day + 1)) {
      const dayStart = day * DAY;
      const first = (Math.max(lo, dayStart) - dayStart) / 1000;
      const last = (Math.min(hi, dayStart + DAY - 1000) - dayStart) / 1000;
      count += lowerBound(this.times, last + 1) - lowerBound(this.times, first);
    }
    return count;
  }

  /** The first matching day (days since 1970-01-01) on or after `day`, or null if the pattern never occurs. */
  nextDay(day: number): number | null {
    const date = new Date(day * DAY);
    let year = date.getUTCFullYear();
    let month = date.getUTCMonth();
    let from = date.getUTCDate();
    for (let n = 0; n < CYCLE_MONTHS; n += 1) {
      const mask = this.maskOf(year, month) & (0xffffffff << from);
      if (mask !== 0) return Date.UTC(year, month, 31 - Math.clz32(mask & -mask)) / DAY;
      month += 1;
      if (month === 12) [year, month] = [year + 1, 0];
      from = 1;
    }
    return null;
  }

  private maskOf(year: number, month: number): number {
    const key = year * 12 + month;
    let mask = this.masks.get(key);
    if (mask === undefined) {
      if (this.masks.size >= MASK_CACHE_LIMIT) this.masks.clear();
      mask = this.months.has(month + 1) ? dayMask(this.fields.days, year, month) : 0;
      this.masks.set(key, mask);
    }
    return mask;
  }
}

/** Bit d set ⇔ day d of the month matches. */
export function dayMask(rules: CronDays, year: number, month: number): number {
  const length = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const firstWeekday = new Date(Date.UTC(year, month, 1)).getUTCDay();
  const weekdayOf = (d: number) => (firstWeekday + d - 1) % 7;
  const all = (2 ** (length + 1) - 2) | 0; // bits 1..length
  if (!rules.domRestricted && !rules.dowRestricted) return all;
  let dom = 0;
  for (const d of rules.dates) if (d <= length) dom |= 1 << d;
  for (const n of rules.fromLast) if (length - n >= 1) dom |= 1 << (length - n);
  for (const d of rules.nearestWeekday) if (d <= length) dom |= 1 << nearestWeekday(d, length, weekdayOf(d));
  if (rules.lastWeekday) dom |= 1 << nearestWeekday(length, length, weekdayOf(length));
  let dow = 0;
  for (let d = 1; d <= length; d += 1) if (rules.weekdays.includes(weekdayOf(d))) dow |= 1 << d;
  for (const { weekday, n } of rules.nth) {
    const d = 1 + ((weekday - firstWeekday + 7) % 7) + 7 * (n - 1);
    if (d <= length) dow |= 1 << d;
  }
  for (const weekday of rules.lastOf) dow |= 1 << (length - ((weekdayOf(length) - weekday + 7) % 7));
  if (rules.domRestricted && rules.dowRestricted) return dom | dow;
  return rules.domRestricted ? dom : dow;
}

/** Quartz's `W`: a Saturday moves to Friday, a Sunday to Monday, never out of the month. */
function nearestWeekday(d: number, length: number, weekday: number): number {
  if (weekday === 6) return d > 1 ? d - 1 : d + 2;
  if (weekday === 0) return d < length ? d + 1 : d - 2;
  return d;
}

function lowerBound(sorted: Int32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
