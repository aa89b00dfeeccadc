import { InvalidScheduleError } from './errors.js';

const validZones = new Map<string, boolean>();

/** True when `timezone` is an IANA zone name this runtime knows. */
export function isValidTimeZone(timezone: string): boolean {
  let valid = validZones.get(timezone);
  if (valid === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
      valid = timezone.length > 0;
    } catch {
      valid = false;
    }
    validZones.set(timezone, valid);
  }
  return valid;
}

export function assertTimeZone(timezone: string, field = 'schedule.timezone'): void {
  if (!isValidTimeZone(timezone)) {
    throw new InvalidScheduleError(field, `${field} must be an IANA time zone name such as "Europe/Berlin", got "${timezone}"`);
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/** The zone's offset from UTC at `instant`, in milliseconds (positive east of Greenwich). */
export function zoneOffsetMs(instant: Date, timezone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timezone).formatToParts(instant)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - (instant.getTime() - instant.getUTCMilliseconds());
}

/** ISO-8601 local time with the zone's offset, e.g. `2026-03-29T09:00:00.000+02:00`. */
export function formatLocal(instant: Date, timezone: string): string {
  const offset = zoneOffsetMs(instant, timezone);
  const wall = new Date(instant.getTime() + offset).toISOString().slice(0, 23);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset) / 60_000;
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${wall}${sign}${hh}:${mm}`;
}
