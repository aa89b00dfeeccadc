import { compileCron } from './cron.js';
import { usesHash } from './cron-expression.js';
import { InvalidScheduleError } from './errors.js';
import { excludingDays } from './excluded-days.js';
import { compileRrule } from './rrule.js';
import type { Schedule, ScheduleSpec } from './schedule-spec.js';
import { assertTimeZone } from './zone.js';

const compiled = new Map<string, Schedule>();
const CACHE_LIMIT = 10_000;

/**
 * Validates `spec` and compiles it; throws {@link InvalidScheduleError} naming the bad field.
 * Cron and rrule schedules are memoised per (expression, zone, DST rule, hash key / anchor), so a
 * thousand tasks sharing an expression share one compiled schedule; bounds and excluded days
 * (calendars, compiled once per version) are applied per call.
 */
export function compileSchedule(spec: ScheduleSpec): Schedule {
  const startAt = boundOf(spec.startAt, 'schedule.startAt');
  const endAt = boundOf(spec.endAt, 'schedule.endAt');
  if (startAt > endAt)
    throw new InvalidScheduleError('schedule.endAt', 'schedule.endAt must not be before schedule.startAt');
  if ((spec.kind === 'at' || spec.kind === 'every') && spec.timezone !== undefined) assertTimeZone(spec.timezone);
  const inner = excludingDays(
    spec.kind === 'cron' || spec.kind === 'rrule' ? memoised(spec) : compileInstantKind(spec),
    spec.exclude ?? [],
  );
  return startAt === -Infinity && endAt === Infinity ? inner : bounded(inner, startAt, endAt);
}

function memoised(spec: Extract<ScheduleSpec, { kind: 'cron' | 'rrule' }>): Schedule {
  const compile = () =>
    spec.kind === 'cron'
      ? compileCron(spec.cron, spec.timezone, spec.hashKey ?? '', spec.dst)
      : compileRrule(spec.rrule, spec.timezone, rruleAnchor(spec), spec.dst);
  // Only text is a key: an array `['* * * * *']` would read as `* * * * *` and find its schedule.
  if (typeof (spec.kind === 'cron' ? spec.cron : spec.rrule) !== 'string') return compile();
  const dst = `${spec.dst?.gap ?? ''}/${spec.dst?.overlap ?? ''}`;
  const anchor = spec.kind === 'rrule' ? rruleAnchor(spec) : null;
  const key =
    spec.kind === 'cron'
      ? `cron\u0000${spec.timezone}\u0000${usesHash(spec.cron) ? (spec.hashKey ?? '') : ''}\u0000${dst}\u0000${spec.cron}`
      : `rrule\u0000${spec.timezone}\u0000${anchor!.getTime()}\u0000${dst}\u0000${spec.rrule}`;
  let schedule = compiled.get(key);
  if (!schedule) {
    schedule = compile();
    if (compiled.size >= CACHE_LIMIT) compiled.clear();
    compiled.set(key, schedule);
  }
  return schedule;
}

/** DTSTART defaults to the task's start, else its anchor (creation); `now` only for ad-hoc previews. */
function rruleAnchor(spec: Extract<ScheduleSpec, { kind: 'rrule' }>): Date {
  return spec.startAt ?? spec.anchor ?? new Date();
}

function compileInstantKind(spec: Extract<ScheduleSpec, { kind: 'at' | 'every' }>): Schedule {
  if (spec.kind === 'at') {
    const runAt = validDate(spec.runAt, 'schedule.at');
    return {
      next: (after) => (runAt > after.getTime() ? new Date(runAt) : null),
      count: (after, until) => (runAt > after.getTime() && runAt <= until.getTime() ? 1 : 0),
    };
  }
  const every = spec.everyMs;
  if (!Number.isSafeInteger(every) || every < 1000)
    throw new InvalidScheduleError('schedule.every', 'schedule.every must be at least 1s');
  const anchor = validDate(spec.anchor, 'schedule.anchor');
  // Elapsed time: slot n is anchor + n·every, whatever the clocks on the wall say.
  // Slots anchor + n·every with n ≥ 0 that are ≤ t: as many as this, for any t.
  const upTo = (t: number) => (t < anchor ? 0 : Math.floor((t - anchor) / every) + 1);
  return {
    next(after) {
      const n = Math.max(0, Math.floor((after.getTime() - anchor) / every) + 1);
      return new Date(anchor + n * every);
    },
    count: (after, until) => Math.max(0, upTo(until.getTime()) - upTo(after.getTime())),
  };
}

function bounded(inner: Schedule, startAt: number, endAt: number): Schedule {
  const count = inner.count?.bind(inner);
  return {
    next(after) {
      const slot = inner.next(new Date(Math.max(after.getTime(), startAt - 1)));
      return slot && slot.getTime() <= endAt ? slot : null;
    },
    count:
      count &&
      ((after, until) => {
        const [from, to] = [Math.max(after.getTime(), startAt - 1), Math.min(until.getTime(), endAt)];
        return to > from ? count(new Date(from), new Date(to)) : 0;
      }),
  };
}

function boundOf(value: Date | null | undefined, field: string): number {
  if (value === null || value === undefined) return field === 'schedule.startAt' ? -Infinity : Infinity;
  return validDate(value, field);
}

function validDate(value: Date, field: string): number {
  const ms = value instanceof Date ? value.getTime() : NaN;
  if (Number.isNaN(ms)) throw new InvalidScheduleError(field, `${field} must be a valid instant`);
  return ms;
}

/** Every slot in `(after, until]`, at most `limit` of them, in order. */
export function slotsBetween(schedule: Schedule, after: Date, until: Date, limit: number): Date[] {
  const slots: Date[] = [];
  let cursor = after;
  while (slots.length < limit) {
    const slot = schedule.next(cursor);
    if (!slot || slot.getTime() > until.getTime()) break;
    slots.push(slot);
    cursor = slot;
  }
  return slots;
}

/**
 * How many slots `schedule` has in `(after, until]`: exactly, and without visiting them where the
 * schedule can count (cron, `every`, `at`); an RRULE is walked (its library only enumerates).
 */
export function countSlots(schedule: Schedule, after: Date, until: Date): number {
  if (until.getTime() <= after.getTime()) return 0;
  if (schedule.count) return schedule.count(after, until);
  let n = 0;
  for (let slot = schedule.next(after); slot && slot.getTime() <= until.getTime(); slot = schedule.next(slot)) n += 1;
  return n;
}

/**
 * The latest `k` slots of `schedule` in `(after, until]`, oldest first, found from `until`
 * backwards: a window ending at `until` widens fourfold until it holds `k` slots (or reaches
 * `after`), and only that window is walked — the cost grows with `k` and the logarithm of the
 * span, not with the number of slots in it (an every-second task paused for a week).
 */
export function latestSlots(schedule: Schedule, after: Date, until: Date, k: number): Date[] {
  const [lo, hi] = [after.getTime(), until.getTime()];
  if (k <= 0 || hi <= lo) return [];
  for (let width = 1_000; ; width *= 4) {
    const from = Math.max(lo, hi - width);
    const found: Date[] = [];
    for (let slot = schedule.next(new Date(from)); slot && slot.getTime() <= hi; slot = schedule.next(slot)) {
      found.push(slot);
      if (found.length > k) found.shift();
    }
    if (found.length >= k || from === lo) return found;
  }
}
