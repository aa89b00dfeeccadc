import { compileCron } from './cron.js';
import type { DstPolicy } from './dst-policy.js';
import { InvalidScheduleError } from './errors.js';
import { compileRrule } from './rrule.js';

export type { DstPolicy } from './dst-policy.js';

export interface ScheduleBounds {
  /** No slot before this instant. */
  startAt?: Date | null;
  /** No slot after this instant. */
  endAt?: Date | null;
}

export type ScheduleSpec =
  | ({ kind: 'cron'; cron: string; timezone: string; hashKey?: string; dst?: DstPolicy } & ScheduleBounds)
  | ({ kind: 'rrule'; rrule: string; timezone: string; anchor?: Date; dst?: DstPolicy } & ScheduleBounds)
  | ({ kind: 'at'; runAt: Date; timezone?: string } & ScheduleBounds)
  | ({ kind: 'every'; everyMs: number; anchor: Date; timezone?: string } & ScheduleBounds);

/** A compiled schedule: a pure function from an instant to the next slot. */
export interface Schedule {
  /** The first slot strictly after `after`, or `null` when the schedule has no more slots. */
  next(after: Date): Date | null;
}

const compiled = new Map<string, Schedule>();
const CACHE_LIMIT = 10_000;

/**
 * Validates `spec` and compiles it; throws {@link InvalidScheduleError} naming the bad field.
 * Compiled schedules (and the slots they computed) are shared by every caller with the same
 * expression, zone and DST policy.
 */
export function compileSchedule(spec: ScheduleSpec): Schedule {
  const key = JSON.stringify(spec);
  let schedule = compiled.get(key);
  if (!schedule) {
    schedule = bounded(compileKind(spec), spec);
    if (compiled.size >= CACHE_LIMIT) compiled.clear();
    compiled.set(key, schedule);
  }
  return schedule;
}

function bounded(inner: Schedule, spec: ScheduleBounds): Schedule {
  const startAt = spec.startAt?.getTime() ?? -Infinity;
  const endAt = spec.endAt?.getTime() ?? Infinity;
  if (startAt === -Infinity && endAt === Infinity) return inner;
  return {
    next(after) {
      const slot = inner.next(new Date(Math.max(after.getTime(), startAt - 1)));
      return slot && slot.getTime() <= endAt ? slot : null;
    },
  };
}

function compileKind(spec: ScheduleSpec): Schedule {
  switch (spec.kind) {
    case 'cron':
      return compileCron(spec.cron, spec.timezone, spec.hashKey, spec.dst);
    case 'rrule':
      return compileRrule(spec.rrule, spec.timezone, spec.startAt ?? spec.anchor ?? new Date(), spec.dst);
    case 'at':
      return { next: (after) => (spec.runAt.getTime() > after.getTime() ? spec.runAt : null) };
    case 'every': {
      if (!(spec.everyMs >= 1000)) throw new InvalidScheduleError('schedule.every', 'schedule.every must be at least 1s');
      const anchor = spec.anchor.getTime();
      return {
        next(after) {
          const n = Math.max(0, Math.floor((after.getTime() - anchor) / spec.everyMs) + 1);
          return new Date(anchor + n * spec.everyMs);
        },
      };
    }
  }
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
