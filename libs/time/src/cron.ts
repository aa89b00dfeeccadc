import { CronCalendar } from './cron-calendar.js';
import { parseCron, usesHash } from './cron-expression.js';
import { type DstPolicy, resolveDstRule } from './dst-policy.js';
import { InvalidScheduleError } from './errors.js';
import { nextFireInstant } from './fire-time.js';
import type { Schedule } from './schedule-spec.js';
import { assertTimeZone } from './zone.js';
import { timelineOf, type ZoneTimeline } from './zone-timeline.js';

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
  const next = (after: number) => nextFireInstant(calendar, timeline, rule, after);
  return {
    next(after) {
      const at = next(after.getTime());
      return at === null ? null : new Date(at);
    },
    count(after, until) {
      return countFireInstants(calendar, timeline, next, after.getTime(), until.getTime());
    },
  };
}

/**
 * The number of instants in `(after, until]` at which `calendar` fires in the zone of `timeline`,
 * without visiting them: within a segment of constant offset each matching wall time is one
 * instant (wall − offset), so the calendar counts them. The DST rule only acts near a segment's
 * edges — a gap's shifted or ended slots and the wall times an overlap drops lie within the size of
 * the change from the segment's start (and, for `last`, before its end) — and those stretches are
 * walked slot by slot with `next`, as the planner would.
 */
function countFireInstants(
  calendar: CronCalendar,
  timeline: ZoneTimeline,
  next: (after: number) => number | null,
  after: number,
  until: number,
): number {
  const walk = (from: number, to: number) => {
    let n = 0;
    for (let at = next(from); at !== null && at <= to; at = next(at)) n += 1;
    return n;
  };
  let count = 0;
  for (let t = after; t < until;) {
    const seg = timeline.segmentAt(t + 1);
    const end = Math.min(seg.end - 1, until);
    const head = Math.min(end, seg.start - 1 + Math.abs(seg.prev - seg.offset));
    const tail = Math.min(end, Math.max(head, t, seg.end - 1 - Math.abs(seg.next - seg.offset)));
    if (head > t) count += walk(t, head);
    const middleFrom = Math.max(t, head);
    if (tail > middleFrom) count += calendar.countWalls(middleFrom + seg.offset, tail + seg.offset);
    if (end > tail) count += walk(tail, end);
    t = end;
  }
  return count;
}

/** Parsed expressions are shared by every zone and task that uses them (their day masks too). */
function calendarOf(expression: string, hashKey: string): { calendar: CronCalendar; wildcardHour: boolean } {
  // Only text is a key: `['* * * * *']` would read as `* * * * *` and find its calendar.
  const key = typeof expression === 'string' ? `${usesHash(expression) ? hashKey : ''}\u0000${expression}` : null;
  let entry = key === null ? undefined : calendars.get(key);
  if (!entry) {
    const fields = parseCron(expression, hashKey);
    const calendar = new CronCalendar(fields);
    // Any start will do: the calendar repeats every 400 years.
    if (calendar.nextDay(0) === null) {
      throw new InvalidScheduleError(
        'schedule.cron',
        `schedule.cron "${expression}" never matches a date (for example 30 February)`,
      );
    }
    entry = { calendar, wildcardHour: fields.wildcardHour };
    if (calendars.size >= CALENDAR_LIMIT) calendars.clear();
    if (key !== null) calendars.set(key, entry);
  }
  return entry;
}
