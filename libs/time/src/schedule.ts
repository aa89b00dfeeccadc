import { CronExpressionParser } from 'cron-parser';
import { InvalidScheduleError } from './errors.js';
import { assertTimeZone } from './zone.js';

/** How a fixed-time expression treats wall times that do not exist (gap) or occur twice (overlap). */
export interface DstPolicy {
  gap?: 'shift' | 'skip' | 'end';
  overlap?: 'first' | 'last' | 'both';
}

export interface ScheduleBounds {
  /** No slot before this instant. */
  startAt?: Date | null;
  /** No slot after this instant. */
  endAt?: Date | null;
}

export type ScheduleSpec =
  | ({ kind: 'cron'; cron: string; timezone: string; hashKey?: string; dst?: DstPolicy } & ScheduleBounds)
  | ({ kind: 'rrule'; rrule: string; timezone: string; dst?: DstPolicy } & ScheduleBounds)
  | ({ kind: 'at'; runAt: Date } & ScheduleBounds)
  | ({ kind: 'every'; everyMs: number; anchor: Date } & ScheduleBounds);

/** A compiled schedule: a pure function from an instant to the next slot. */
export interface Schedule {
  /** The first slot strictly after `after`, or `null` when the schedule has no more slots. */
  next(after: Date): Date | null;
}

/** Validates `spec` and compiles it. Throws {@link InvalidScheduleError} naming the bad field. */
export function compileSchedule(spec: ScheduleSpec): Schedule {
  const inner = compileKind(spec);
  const startAt = spec.startAt?.getTime() ?? -Infinity;
  const endAt = spec.endAt?.getTime() ?? Infinity;
  return {
    next(after) {
      const from = new Date(Math.max(after.getTime(), startAt - 1));
      const slot = inner.next(from);
      return slot && slot.getTime() <= endAt ? slot : null;
    },
  };
}

function compileKind(spec: ScheduleSpec): Schedule {
  switch (spec.kind) {
    case 'cron':
      return compileCron(spec.cron, spec.timezone);
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
    case 'rrule':
      throw new InvalidScheduleError('schedule.rrule', 'rrule schedules are not supported yet');
  }
}

function compileCron(expression: string, timezone: string): Schedule {
  assertTimeZone(timezone);
  if (/\b(CRON_)?TZ=/i.test(expression)) {
    throw new InvalidScheduleError('schedule.cron', 'schedule.cron must not set CRON_TZ= or TZ=; use schedule.timezone');
  }
  const fields = expression.trim().split(/\s+/);
  if (!(expression.trim().startsWith('@') && fields.length === 1) && fields.length !== 5 && fields.length !== 6) {
    throw new InvalidScheduleError('schedule.cron', 'schedule.cron must have 5 fields (minute first) or 6 (seconds first), or be a macro such as @daily');
  }
  try {
    CronExpressionParser.parse(expression, { tz: timezone });
  } catch (error) {
    throw new InvalidScheduleError('schedule.cron', `schedule.cron is not a valid cron expression: ${(error as Error).message}`);
  }
  return {
    next(after) {
      const it = CronExpressionParser.parse(expression, { tz: timezone, currentDate: after });
      try {
        return it.next().toDate();
      } catch {
        return null;
      }
    },
  };
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
