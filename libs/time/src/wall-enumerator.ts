const DAY = 86_400_000;
/** Days searched for the next matching date before giving up (covers `0 0 29 2 *` across 8 years). */
const MAX_DAYS = 366 * 9;

export interface CronFieldValues {
  second: readonly number[];
  minute: readonly number[];
  hour: readonly number[];
  dayOfMonth: readonly number[];
  month: readonly number[];
  dayOfWeek: readonly number[];
}

/**
 * Matching wall times of a plain cron expression (no `L`, `W` or `#`), straight from its field
 * values: day by day, then every hour × minute × second of a matching day. This is what makes a
 * slot cost microseconds rather than a cron-parser evaluation. Day matching follows Vixie cron:
 * when both day-of-month and day-of-week are restricted, either may match.
 */
export class WallEnumerator {
  private readonly doms: Set<number>;
  private readonly months: Set<number>;
  private readonly dows: Set<number>;
  private readonly times: number[];

  constructor(
    fields: CronFieldValues,
    private readonly domRestricted: boolean,
    private readonly dowRestricted: boolean,
    /** Replaces the day-of-month set (for `W`, which cron-parser does not know). */
    private readonly domMatches?: (day: Date) => boolean,
  ) {
    this.doms = new Set(fields.dayOfMonth);
    this.months = new Set(fields.month);
    this.dows = new Set(fields.dayOfWeek.map((d) => d % 7));
    this.times = [];
    for (const h of fields.hour) for (const m of fields.minute) for (const s of fields.second) this.times.push(((h * 60 + m) * 60 + s) * 1000);
    this.times.sort((a, b) => a - b);
  }

  /** Matching wall times strictly after `fromWall`: at least `count`, and past `pastWall`. */
  walls(fromWall: number, pastWall: number, count: number): { walls: number[]; exhausted: boolean } {
    const walls: number[] = [];
    let day = Math.floor(fromWall / DAY) * DAY;
    for (let n = 0; n < MAX_DAYS; n += 1, day += DAY) {
      if (!this.matchesDay(day)) continue;
      for (const time of this.times) {
        const wall = day + time;
        if (wall <= fromWall) continue;
        walls.push(wall);
        if (walls.length >= count && wall > pastWall) return { walls, exhausted: false };
      }
      n = 0;
    }
    return { walls, exhausted: true };
  }

  private matchesDay(day: number): boolean {
    const date = new Date(day);
    if (!this.months.has(date.getUTCMonth() + 1)) return false;
    const dom = this.domMatches ? this.domMatches(date) : this.doms.has(date.getUTCDate());
    const dow = this.dows.has(date.getUTCDay());
    if (this.domRestricted && this.dowRestricted) return dom || dow;
    return dom && dow;
  }
}

/**
 * `nW` (the weekday nearest day n, within the month) and `LW` (the last weekday of the month), as
 * Quartz defines them.
 */
export function nearestWeekday(field: string): ((day: Date) => boolean) | null {
  const m = /^(L|\d{1,2})W$/i.exec(field);
  if (!m) return null;
  return (day) => {
    const year = day.getUTCFullYear();
    const month = day.getUTCMonth();
    const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    let target = m[1]!.toUpperCase() === 'L' ? last : Math.min(Number(m[1]), last);
    const weekday = new Date(Date.UTC(year, month, target)).getUTCDay();
    if (weekday === 6) target = target === 1 ? 3 : target - 1;
    else if (weekday === 0) target = target === last ? target - 2 : target + 1;
    return day.getUTCDate() === target;
  };
}
