import rrulePkg from 'rrule';
import { type DstPolicy, FIXED_TIME_RULE, fireInstants } from './dst-policy.js';
import { InvalidScheduleError } from './errors.js';
import type { Schedule } from './schedule.js';
import { WallSlotCache } from './slot-cache.js';
import { wallOf } from './wall-clock.js';
import { assertTimeZone } from './zone.js';

const { rrulestr } = rrulePkg;

/**
 * An RFC 5545 recurrence (`DTSTART;TZID=…:…` + `RRULE:…`, COUNT/UNTIL), evaluated like cron: the
 * rule runs on wall-clock time (the rrule package in floating UTC) and each occurrence is mapped to
 * instants under the DST rule of a fixed-time schedule. DTSTART defaults to `anchor`.
 */
export function compileRrule(text: string, timezone: string, anchor: Date, dst: DstPolicy = {}): Schedule {
  assertTimeZone(timezone);
  const lines = text.trim().split(/\r?\n|\\n/).map((l) => l.trim()).filter(Boolean);
  let dtstart: Date | null = null;
  const rules: string[] = [];
  for (const line of lines) {
    const start = /^DTSTART(?:;TZID=([^:;]+))?:(\d{8}T\d{6})(Z?)$/i.exec(line);
    if (start) {
      if (start[1] && start[1] !== timezone) assertTimeZone(start[1], 'schedule.rrule');
      dtstart = parseBasic(start[2]!);
      continue;
    }
    rules.push(line.toUpperCase().startsWith('RRULE:') || line.toUpperCase().startsWith('EXDATE') ? line : `RRULE:${line}`);
  }
  if (rules.length === 0) throw new InvalidScheduleError('schedule.rrule', 'schedule.rrule needs an RRULE');
  const startWall = dtstart ?? new Date(wallOf(anchor.getTime(), timezone));
  let rule: ReturnType<typeof rrulestr>;
  try {
    rule = rrulestr(rules.join('\n'), { dtstart: startWall, forceset: false });
    rule.after(startWall, true);
  } catch (error) {
    throw new InvalidScheduleError('schedule.rrule', `schedule.rrule is not a valid RFC 5545 rule: ${(error as Error).message}`);
  }
  const policy = { ...FIXED_TIME_RULE, ...Object.fromEntries(Object.entries(dst).filter(([, v]) => v !== undefined)) };
  const cache = new WallSlotCache(
    timezone,
    (fromWall, pastWall, count) => {
      const walls: number[] = [];
      let cursor = new Date(fromWall);
      while (walls.length < count || walls[walls.length - 1]! <= pastWall) {
        const next = rule.after(cursor, false);
        if (!next) return { walls, exhausted: true };
        walls.push(next.getTime());
        cursor = next;
      }
      return { walls, exhausted: false };
    },
    (wall) => fireInstants(wall, timezone, policy),
  );
  return { next: (after) => cache.next(after) };
}

/** `20260101T090000` as a wall-clock instant (labelled UTC). */
function parseBasic(value: string): Date {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})$/.exec(value)!;
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}
