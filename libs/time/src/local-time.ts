import { AmbiguousLocalTimeError, InvalidScheduleError } from './errors.js';
import { instantsOfWall } from './wall-clock.js';
import { assertTimeZone } from './zone.js';

export type Disambiguation = 'earlier' | 'later' | 'compatible';

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/;
const WITH_OFFSET = /(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * The instant of a local wall time (`2026-03-29T02:30:00`) in `timezone`. A time that does not
 * exist (a gap) or exists twice (a repeated hour) is refused unless `disambiguation` says which:
 * `earlier`/`later` pick the instant before/after the transition; `compatible` (Temporal's default)
 * is `earlier` in a repeated hour and `later` in a gap.
 */
export function resolveLocalTime(local: string, timezone: string, disambiguation?: Disambiguation, field = 'schedule.at'): Date {
  assertTimeZone(timezone);
  const m = LOCAL.exec(local);
  const wall = m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +(m[6] ?? 0), +(m[7] ?? '0').padEnd(3, '0')) : NaN;
  if (!m || Number.isNaN(wall) || new Date(wall).getUTCDate() !== +m[3]! || +m[4]! > 23 || +m[5]! > 59) {
    throw new InvalidScheduleError(field, `${field} must be a local time such as 2026-06-01T09:00:00, or an instant with an offset`);
  }
  const { instants, gap } = instantsOfWall(wall, timezone);
  if (instants.length === 1) return new Date(instants[0]!);
  if (gap) {
    if (!disambiguation) throw new AmbiguousLocalTimeError(field, `${local} does not exist in ${timezone} (the clocks skip it); pass disambiguation: earlier, later or compatible`);
    return new Date(disambiguation === 'earlier' ? wall - gap.after : wall - gap.before);
  }
  if (!disambiguation) throw new AmbiguousLocalTimeError(field, `${local} occurs twice in ${timezone} (the clocks repeat it); pass disambiguation: earlier, later or compatible`);
  return new Date(disambiguation === 'later' ? instants[instants.length - 1]! : instants[0]!);
}

/** A one-off `at`: an instant with an offset (`…Z`, `…+02:00`), or a local wall time in `timezone`. */
export function parseAt(input: string, timezone: string, disambiguation?: Disambiguation, field = 'schedule.at'): Date {
  if (WITH_OFFSET.test(input)) {
    const at = new Date(input);
    if (Number.isNaN(at.getTime()) || !LOCAL.test(input.replace(WITH_OFFSET, ''))) {
      throw new InvalidScheduleError(field, `${field} must be an ISO-8601 instant such as 2026-06-01T07:00:00Z`);
    }
    return at;
  }
  return resolveLocalTime(input, timezone, disambiguation, field);
}
