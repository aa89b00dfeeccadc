import { CronExpressionParser } from 'cron-parser';
import { type DstPolicy, ELAPSED_TIME_RULE, FIXED_TIME_RULE, fireInstants } from './dst-policy.js';
import { InvalidScheduleError } from './errors.js';
import { WallSlotCache } from './slot-cache.js';
import { type CronFieldValues, nearestWeekday, WallEnumerator } from './wall-enumerator.js';
import type { Schedule } from './schedule.js';
import { assertTimeZone } from './zone.js';

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *',
};

/**
 * A cron schedule that follows DESIGN §6. The expression is evaluated on local **wall-clock** time
 * (cron-parser in UTC, which has no transitions), and each matching wall time is mapped to real
 * instants with the zone's rules: a fixed-time expression shifts through gaps and fires once in a
 * repeated hour; a wildcard-hour one fires at every real instant whose wall time matches.
 */
export function compileCron(expression: string, timezone: string, hashKey = '', dst: DstPolicy = {}): Schedule {
  assertTimeZone(timezone);
  if (/\b(CRON_)?TZ\s*=/i.test(expression)) {
    throw new InvalidScheduleError('schedule.cron', 'schedule.cron must not set CRON_TZ= or TZ=; use schedule.timezone');
  }
  const trimmed = expression.trim();
  const expanded = MACROS[trimmed.toLowerCase()] ?? trimmed;
  const fields = expanded.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidScheduleError('schedule.cron', 'schedule.cron must have 5 fields (minute first) or 6 (seconds first), or be a macro such as @daily');
  }
  const options = { tz: 'UTC', hashSeed: hashKey || undefined, strict: false };
  const six = fields.length === 6 ? [...fields] : ['0', ...fields];
  // cron-parser knows L and # but not W: a W day-of-month is matched here, the rest parsed as `*`.
  const weekday = nearestWeekday(six[3]!);
  if (weekday) six[3] = '*';
  const parsable = six.join(' ');
  try {
    CronExpressionParser.parse(parsable, options).next();
  } catch (error) {
    throw new InvalidScheduleError('schedule.cron', `schedule.cron is not a valid cron expression: ${(error as Error).message}`);
  }
  const rule = six[2] === '*' ? ELAPSED_TIME_RULE : { ...FIXED_TIME_RULE, ...definedOnly(dst) };
  const special = /[L#]/i.test(`${six[3]} ${six[5]}`);
  const fast = special
    ? null
    : new WallEnumerator(fieldValues(CronExpressionParser.parse(parsable, options)), weekday !== null || !isAny(six[3]!), !isAny(six[5]!), weekday ?? undefined);
  const cache = new WallSlotCache(
    timezone,
    fast ? (fromWall, pastWall, count) => fast.walls(fromWall, pastWall, count) : (fromWall, pastWall, count) => {
      const it = CronExpressionParser.parse(parsable, { ...options, currentDate: new Date(fromWall) });
      const walls: number[] = [];
      try {
        while (walls.length < count || walls[walls.length - 1]! <= pastWall) walls.push(it.next().getTime());
        return { walls, exhausted: false };
      } catch {
        // No further match: the schedule ends here.
        return { walls, exhausted: true };
      }
    },
    (wall) => fireInstants(wall, timezone, rule),
  );
  return { next: (after) => cache.next(after) };
}

const isAny = (field: string) => field === '*' || field === '?';

function fieldValues(expression: ReturnType<typeof CronExpressionParser.parse>): CronFieldValues {
  const f = expression.fields;
  const numbers = (field: { values: readonly unknown[] }) => field.values.filter((v): v is number => typeof v === 'number');
  return {
    second: numbers(f.second), minute: numbers(f.minute), hour: numbers(f.hour),
    dayOfMonth: numbers(f.dayOfMonth), month: numbers(f.month), dayOfWeek: numbers(f.dayOfWeek),
  };
}

function definedOnly(dst: DstPolicy): DstPolicy {
  return Object.fromEntries(Object.entries(dst).filter(([, v]) => v !== undefined));
}
