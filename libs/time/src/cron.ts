import { CronCalendar } from './cron-calendar.js';
import { parseCron, usesHash } from './cron-expression.js';
import { type DstPolicy, resolveDstRule } from './dst-policy.js';
import { InvalidScheduleError } from './errors.js';
import { nextFireInstant } from './fire-time.js';
import type { Schedule } from './schedule-spec.js';
import { assertTimeZone } from './zone.js';
import { timelineOf } from './zone-timeline.js';

const calendars = new Map<string, { calendar: CronCalendar; wildcardHour: boolean }>();
const CALENDAR_LIMIT = 5_000;

/**
 * A cron schedule in `timezone` following DESIGN §6: the expression is matched against local
 * wall-clock time, and each matching wall time is mapped to real instants with the zone's
 * transitions. A fixed-time expression (some hours only) shifts through a gap and fires once in an
 * overlap; a wildcard-hour expression fires at every real instant whose wall time matches.
 * `dst` overrides either default. Throws {@link InvalidScheduleError} for a bad expression or
 * zone, including one that can never match (`0 0 30 2 *`).
 */
export function compileCron(expression: string, timezone: string, hashKey = '', dst?: DstPolicy | null): Schedule {
  assertTimeZone(timezone);
  const { calendar, wildcardHour } = calendarOf(expression, hashKey);
  const rule = resolveDstRule(wildcardHour, dst);
  const timeline = timelineOf(timezone);
  return {
    next(after) {
      const at = nextFireInstant(calendar, timeline, rule, after.getTime());
      return at === null ? null : new Date(at);
    },
  };
}

/** Parsed expressions are shared by every zone and task that uses them (their day masks too). */
function calendarOf(expression: string, hashKey: string): { calendar: CronCalendar; wildcardHour: boolean } {
  const key = `${usesHash(expression) ? hashKey : ''}\u0000${expression}`;
  let entry = calendars.get(key);
  if (!entry) {
    const fields = parseCron(expression, hashKey);
    const calendar = new CronCalendar(fields);
    // Any start will do: the calendar repeats every 400 years.
    if (calendar.nextDay(0) === null) {
      throw new InvalidScheduleError('schedule.cron', `schedule.cron "${expression}" never matches a date (for example 30 February)`);
    }
    entry = { calendar, wildcardHour: fields.wildcardHour };
    if (calendars.size >= CALENDAR_LIMIT) calendars.clear();
    calendars.set(key, entry);
  }
  return entry;
}
