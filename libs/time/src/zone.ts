import { InvalidScheduleError } from './errors.js';
import { offsetAt } from './zone-timeline.js';

const validZones = new Map<string, boolean>();

/** True when `timezone` is an IANA zone name this runtime knows (`Europe/Berlin`, `UTC`). */
export function isValidTimeZone(timezone: string): boolean {
  if (typeof timezone !== 'string') return false;
  let valid = validZones.get(timezone);
  if (valid === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
      // Newer runtimes also accept raw offsets (`+05:00`); DESIGN §6 asks for a zone name.
      valid = /^[A-Za-z]/.test(timezone);
    } catch {
      valid = false; // a RangeError is the runtime's way to say it knows no such zone: the answer
    }
    if (validZones.size > 10_000) validZones.clear();
    validZones.set(timezone, valid);
  }
  return valid;
}

/** Throws {@link InvalidScheduleError} on `field` unless `timezone` is a known IANA zone name. */
export function assertTimeZone(timezone: string, field = 'schedule.timezone'): void {
  if (!isValidTimeZone(timezone)) {
    throw new InvalidScheduleError(
      field,
      `${field} must be an IANA time zone name such as "Europe/Berlin", got "${timezone}"`,
    );
  }
}

/** The zone's offset from UTC at `instant`, in milliseconds (positive east of Greenwich). */
export function zoneOffsetMs(instant: Date, timezone: string): number {
  return offsetAt(instant.getTime(), timezone);
}

/** ISO-8601 local time with the zone's offset, e.g. `2026-03-29T09:00:00.000+02:00`. */
export function formatLocal(instant: Date, timezone: string): string {
  const offset = offsetAt(instant.getTime(), timezone);
  const wall = new Date(instant.getTime() + offset).toISOString().slice(0, 23);
  const abs = Math.abs(offset) / 1000;
  const hhmm = `${pad(Math.floor(abs / 3600))}:${pad(Math.floor(abs / 60) % 60)}`;
  // Offsets before ~1900 (local mean time) carry seconds, which RFC 9557 / Temporal print as :ss.
  const ss = abs % 60 === 0 ? '' : `:${pad(abs % 60)}`;
  return `${wall}${offset < 0 ? '-' : '+'}${hhmm}${ss}`;
}

const pad = (n: number) => String(n).padStart(2, '0');
