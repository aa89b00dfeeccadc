import type { CronFieldCollection } from 'cron-parser';

/** Which days of a month match: the day-of-month and day-of-week fields, `L`, `W` and `#` resolved per month. */
export interface CronDays {
  /** A field other than `*`/`?`. When both are restricted a day matches either (Vixie cron, cron-parser). */
  domRestricted: boolean;
  dowRestricted: boolean;
  /** Plain days of the month, 1-31. */
  dates: number[];
  /** `L` (0) and `L-n` (n): days before the month's last day. */
  fromLast: number[];
  /** `15W`: the weekday nearest the 15th, within the month. */
  nearestWeekday: number[];
  /** `LW`: the month's last weekday. */
  lastWeekday: boolean;
  /** Plain weekdays, 0 (Sunday) to 6. */
  weekdays: number[];
  /** `5#3`: the third Friday. */
  nth: { weekday: number; n: number }[];
  /** `5L`: the month's last Friday. */
  lastOf: number[];
}

/** A parsed cron expression: sorted field values, evaluated later on wall-clock time. */
export interface CronFields {
  seconds: number[];
  minutes: number[];
  hours: number[];
  months: number[];
  days: CronDays;
  /** Every hour matches: the expression follows elapsed time (DESIGN §6). */
  wildcardHour: boolean;
}

/** The six fields in cron-parser's order (seconds first), with the names our messages use. */
export const CRON_FIELDS = [
  { key: 'second', name: 'second' },
  { key: 'minute', name: 'minute' },
  { key: 'hour', name: 'hour' },
  { key: 'dayOfMonth', name: 'day-of-month' },
  { key: 'month', name: 'month' },
  { key: 'dayOfWeek', name: 'day-of-week' },
] as const;

export type CronFieldKey = (typeof CRON_FIELDS)[number]['key'];

/**
 * Collects what the fields of an expression stand for, from cron-parser's parsed fields (a whole
 * expression, or one list item at a time) and from the day-of-month items only Punctual reads.
 * A value named twice counts once.
 */
export class CronFieldsBuilder {
  readonly seconds = new Set<number>();
  readonly minutes = new Set<number>();
  readonly hours = new Set<number>();
  readonly months = new Set<number>();
  readonly dates = new Set<number>();
  readonly fromLast = new Set<number>();
  readonly nearestWeekday = new Set<number>();
  lastWeekday = false;
  readonly weekdays = new Set<number>();
  /** `weekday * 8 + n` for `weekday#n`. */
  private readonly nth = new Set<number>();
  readonly lastOf = new Set<number>();

  /** Adds what cron-parser made of field `key` of `parsed`. */
  add(parsed: CronFieldCollection, key: CronFieldKey): void {
    const values: readonly (number | string)[] = parsed[key].values;
    if (key === 'second' || key === 'minute' || key === 'hour' || key === 'month') {
      const target = { second: this.seconds, minute: this.minutes, hour: this.hours, month: this.months }[key];
      for (const v of values) target.add(Number(v));
    } else if (key === 'dayOfMonth') {
      for (const v of values) v === 'L' ? this.fromLast.add(0) : this.dates.add(Number(v));
    } else {
      const n = parsed.dayOfWeek.nthDay;
      for (const v of values) {
        // cron-parser keeps `5L` (last Friday) as a string; 0 and 7 are both Sunday.
        if (typeof v === 'string') this.lastOf.add(Number(v.charAt(0)) % 7);
        else if (n > 0) this.nth.add((v % 7) * 8 + n);
        else this.weekdays.add(v % 7);
      }
    }
  }

  build(domRestricted: boolean, dowRestricted: boolean): CronFields {
    const sorted = (set: Set<number>) => [...set].sort((a, b) => a - b);
    const hours = sorted(this.hours);
    return {
      seconds: sorted(this.seconds),
      minutes: sorted(this.minutes),
      hours,
      months: sorted(this.months),
      days: {
        domRestricted,
        dowRestricted,
        dates: sorted(this.dates),
        fromLast: sorted(this.fromLast),
        nearestWeekday: sorted(this.nearestWeekday),
        lastWeekday: this.lastWeekday,
        weekdays: sorted(this.weekdays),
        nth: sorted(this.nth).map((code) => ({ weekday: Math.floor(code / 8), n: code % 8 })),
        lastOf: sorted(this.lastOf),
      },
      wildcardHour: hours.length === 24,
    };
  }
}
