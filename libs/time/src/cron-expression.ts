import {
  DAY_OF_MONTH, DAY_OF_WEEK, HOUR, MINUTE, MONTH, SECOND, expandItem, fieldError, fieldHashes, valueOf,
} from './cron-field.js';
import { InvalidScheduleError } from './errors.js';

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

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *',
  '@minutely': '* * * * *', '@weekdays': '0 0 * * 1-5', '@weekends': '0 0 * * 0,6',
};

/**
 * Parses a 5-field (minute first) or 6-field (seconds first) expression or a macro such as
 * `@daily`. `hashKey` (the task name) fixes what `H` stands for. Throws
 * {@link InvalidScheduleError} on `schedule.cron` with a message naming the bad field.
 */
export function parseCron(expression: string, hashKey = ''): CronFields {
  if (typeof expression !== 'string' || expression.trim() === '' || expression.length > 1024) {
    throw new InvalidScheduleError('schedule.cron', 'schedule.cron must be a cron expression such as "*/15 * * * *"');
  }
  if (/(^|\s)(CRON_TZ|TZ)\s*=/i.test(expression)) {
    throw new InvalidScheduleError('schedule.cron', 'schedule.cron must not set CRON_TZ= or TZ=; give the zone in schedule.timezone');
  }
  const trimmed = expression.trim();
  if (trimmed.startsWith('@') && !MACROS[trimmed.toLowerCase()]) {
    throw new InvalidScheduleError('schedule.cron', `schedule.cron macro ${trimmed} is not supported; use one of ${Object.keys(MACROS).join(', ')}`);
  }
  const fields = (MACROS[trimmed.toLowerCase()] ?? trimmed).split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidScheduleError('schedule.cron', `schedule.cron has ${fields.length} fields; it needs 5 (minute first) or 6 (seconds first), or a macro such as @daily`);
  }
  const [sec, min, hour, dom, month, dow] = (fields.length === 6 ? fields : ['0', ...fields]) as [string, string, string, string, string, string];
  const hash = fieldHashes(hashKey);
  const hours = values(hour, HOUR, hash.hour);
  return {
    seconds: values(sec, SECOND, hash.second),
    minutes: values(min, MINUTE, hash.minute),
    hours,
    months: values(month, MONTH, hash.month),
    days: days(dom, dow, hash.dayOfMonth, hash.dayOfWeek),
    wildcardHour: hours.length === 24,
  };
}

/**
 * Whether `hashKey` can change what `expression` means: only an `H` does (the letter also occurs
 * in `THU` and in macros such as `@monthly`, which hash nothing). Lets tasks share a schedule.
 */
export function usesHash(expression: string): boolean {
  return !expression.trim().startsWith('@') && /h/i.test(expression.replace(/thu/gi, ''));
}

function values(text: string, shape: typeof SECOND, hash: number): number[] {
  const all = new Set<number>();
  for (const item of listItems(text, shape)) for (const v of expandItem(item, shape, hash)) all.add(v);
  return [...all].sort((a, b) => a - b);
}

function listItems(text: string, shape: typeof SECOND): string[] {
  const items = text.split(',');
  if (items.some((item) => item === '')) throw fieldError(shape, text, 'empty list item');
  return items;
}

function days(dom: string, dow: string, domHash: number, dowHash: number): CronDays {
  const result: CronDays = {
    domRestricted: dom !== '*' && dom !== '?', dowRestricted: dow !== '*' && dow !== '?',
    dates: [], fromLast: [], nearestWeekday: [], lastWeekday: false, weekdays: [], nth: [], lastOf: [],
  };
  for (const item of listItems(dom, DAY_OF_MONTH)) {
    const last = /^L(?:-(\d+))?$/i.exec(item);
    const nearest = /^(\d+)W$/i.exec(item);
    if (last) {
      const n = Number(last[1] ?? 0);
      if (n > 30) throw fieldError(DAY_OF_MONTH, item, 'L-n counts back at most 30 days');
      result.fromLast.push(n);
    } else if (/^LW$/i.test(item)) result.lastWeekday = true;
    else if (nearest) result.nearestWeekday.push(valueOf(DAY_OF_MONTH, item, nearest[1]!));
    else result.dates.push(...expandItem(item, DAY_OF_MONTH, domHash));
  }
  for (const item of listItems(dow, DAY_OF_WEEK)) {
    const nth = /^(\w+)#(\d+)$/.exec(item);
    const last = /^(\w+)L$/i.exec(item);
    if (nth) {
      const n = Number(nth[2]);
      if (n < 1 || n > 5) throw fieldError(DAY_OF_WEEK, item, 'the occurrence after # must be 1-5');
      result.nth.push({ weekday: weekdayOf(nth[1]!, item, dowHash), n });
    } else if (last) result.lastOf.push(weekdayOf(last[1]!, item, dowHash));
    else if (/^L$/i.test(item)) throw fieldError(DAY_OF_WEEK, item, 'a bare L is ambiguous; write 5L for the last Friday');
    else result.weekdays.push(...expandItem(item, DAY_OF_WEEK, dowHash).map((d) => d % 7));
  }
  result.weekdays = [...new Set(result.weekdays)];
  return result;
}

function weekdayOf(token: string, item: string, hash: number): number {
  const values = /^H$/i.test(token) ? expandItem('H', DAY_OF_WEEK, hash) : [valueOf(DAY_OF_WEEK, item, token)];
  return values[0]! % 7;
}
