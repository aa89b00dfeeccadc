import { AmbiguousLocalTimeError, InvalidScheduleError } from './errors.js';
import { instantsOfWall } from './wall-time.js';
import { assertTimeZone } from './zone.js';

/** Which instant a local time means when it does not exist or exists twice (Temporal's names). */
export type Disambiguation = 'earlier' | 'later' | 'compatible';

const DISAMBIGUATIONS: readonly string[] = ['earlier', 'later', 'compatible'];
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/i;
const OFFSET = /(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * The instant of a local wall time without offset (`2026-03-29T02:30:00`) in `timezone`.
 *
 * A time the clocks skip (a gap) or show twice (an overlap) throws {@link AmbiguousLocalTimeError}
 * unless `disambiguation` says which instant is meant, as Temporal does: `earlier` / `later` are
 * the instants computed with the offset after / before a gap, or the first / second pass of an
 * overlap; `compatible` is `later` in a gap (02:30 on a one-hour gap → 03:30) and `earlier` in an
 * overlap — the same instant a fixed-time cron job gets.
 */
export function resolveLocalTime(
  local: string,
  timezone: string,
  disambiguation?: Disambiguation,
  field = 'schedule.at',
): Date {
  assertTimeZone(timezone);
  if (disambiguation !== undefined && !DISAMBIGUATIONS.includes(disambiguation)) {
    throw new InvalidScheduleError(
      'schedule.disambiguation',
      'schedule.disambiguation must be earlier, later or compatible',
    );
  }
  const wall = parseWall(local, field);
  const { instants, gap } = instantsOfWall(wall, timezone);
  if (instants.length === 1) return new Date(instants[0]!);
  if (gap) {
    if (!disambiguation) {
      throw new AmbiguousLocalTimeError(
        field,
        `${local} does not exist in ${timezone} (the clocks skip it); give disambiguation: earlier, later or compatible`,
      );
    }
    return new Date(disambiguation === 'earlier' ? wall - gap.after : wall - gap.before);
  }
  if (!disambiguation) {
    throw new AmbiguousLocalTimeError(
      field,
      `${local} occurs twice in ${timezone} (the clocks repeat it); give disambiguation: earlier, later or compatible`,
    );
  }
  return new Date(disambiguation === 'later' ? instants[instants.length - 1]! : instants[0]!);
}

/**
 * A one-off `at`: an ISO-8601 instant with an offset (`2026-06-01T07:00:00Z`, `…+02:00`), or a
 * local wall time in `timezone` resolved by {@link resolveLocalTime}.
 */
export function parseAt(input: string, timezone: string, disambiguation?: Disambiguation, field = 'schedule.at'): Date {
  if (typeof input !== 'string') throw invalid(field);
  const text = input.trim();
  const offset = OFFSET.exec(text);
  if (!offset || !LOCAL.test(text.slice(0, offset.index)))
    return resolveLocalTime(text, timezone, disambiguation, field);
  const wall = parseWall(text.slice(0, offset.index), field);
  const o = /^([+-])(\d{2}):?(\d{2})?$/.exec(offset[0]);
  if (!o) return new Date(wall); // Z
  if (Number(o[2]) > 23 || Number(o[3] ?? 0) > 59) throw invalid(field);
  const ms = (Number(o[2]) * 60 + Number(o[3] ?? 0)) * 60_000;
  return new Date(o[1] === '+' ? wall - ms : wall + ms);
}

/** `2026-03-29T02:30[:00[.000]]` as ms of a UTC-labelled clock; impossible dates are refused. */
function parseWall(local: string, field: string): number {
  const m = LOCAL.exec(local);
  if (!m) throw invalid(field);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wall = Date.UTC(y, mo - 1, d, h, mi, s, Number((m[7] ?? '0').padEnd(3, '0')));
  const back = new Date(wall);
  if (
    Number.isNaN(wall) ||
    back.getUTCFullYear() !== y ||
    back.getUTCMonth() !== mo - 1 ||
    back.getUTCDate() !== d ||
    h > 23 ||
    mi > 59 ||
    s > 59
  ) {
    throw invalid(field);
  }
  return wall;
}

function invalid(field: string): InvalidScheduleError {
  return new InvalidScheduleError(
    field,
    `${field} must be an instant with an offset (2026-06-01T07:00:00Z) or a local time (2026-06-01T09:00:00) with schedule.timezone`,
  );
}
