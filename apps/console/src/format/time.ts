/**
 * The browser's own time zone (an IANA name). The locale is named: a browser started with a POSIX
 * locale reports `en-US@posix`, which `Intl` refuses as its default.
 */
export function browserZone(): string {
  return new Intl.DateTimeFormat('en-US').resolvedOptions().timeZone;
}

const formats = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string, zoneName: 'shortOffset' | 'longOffset'): Intl.DateTimeFormat {
  const key = `${zone}|${zoneName}`;
  let format = formats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: zoneName,
    });
    formats.set(key, format);
  }
  return format;
}

function parts(at: Date, zone: string, zoneName: 'shortOffset' | 'longOffset'): Record<string, string> {
  return Object.fromEntries(
    formatter(zone, zoneName)
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
}

/** `2026-03-29 09:00:00 GMT+2`: the wall time in `zone`, to the second, with its offset (see {@link zoneName}). */
export function formatInZone(at: Date | string, zone: string): string {
  const p = parts(new Date(at), zone, 'shortOffset');
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${zoneName(at, zone)}`;
}

/** `2026-03-29`: the local date of `at` in `zone`. */
export function localDate(at: Date | string, zone: string): string {
  const p = parts(new Date(at), zone, 'shortOffset');
  return `${p.year}-${p.month}-${p.day}`;
}

/** The offset of `zone` from UTC at `at`, in minutes (east positive): +120 for Berlin in summer. */
export function offsetMinutes(at: Date | string, zone: string): number {
  const name = parts(new Date(at), zone, 'longOffset').timeZoneName ?? 'GMT';
  const match = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(name);
  if (!match || !match[1]) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === '-' ? -minutes : minutes;
}

/** `+02:00`, `-03:30`, `±00:00`. */
export function formatOffset(minutes: number): string {
  if (minutes === 0) return '±00:00';
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

const UNITS: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1_000, 's'],
];

/** A span of milliseconds for people: `850 ms`, `1.2 s`, `42 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`. */
export function formatSpan(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? '-' : '';
  if (abs < 1_000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  const i = UNITS.findIndex(([size]) => abs >= size);
  const [size, unit] = UNITS[i]!;
  const whole = Math.floor(abs / size);
  const [nextSize, nextUnit] = UNITS[i + 1]!;
  const rest = Math.floor((abs - whole * size) / nextSize);
  return `${sign}${whole} ${unit}${rest ? ` ${rest} ${nextUnit}` : ''}`;
}

/** `in 3 h 20 min` or `5 min ago`, from `now`. */
export function relative(at: Date | string, now: number = Date.now()): string {
  const ms = new Date(at).getTime() - now;
  if (Math.abs(ms) < 1_000) return 'now';
  return ms > 0 ? `in ${formatSpan(ms)}` : `${formatSpan(-ms)} ago`;
}

/** `09:00`, or `09:00:05` with `seconds`: the 24-hour wall clock of `at` in `zone`. */
export function formatClock(at: Date | string | number, zone: string, seconds = false): string {
  const p = parts(new Date(at), zone, 'shortOffset');
  return `${p.hour}:${p.minute}${seconds ? `:${p.second}` : ''}`;
}

/**
 * `GMT+2`, `GMT-4`, `GMT+5:30`, `UTC`: how the console names `zone` at `at` after a time — its
 * offset, written the same way for every zone (never `EDT` beside `GMT+1`: English has
 * abbreviations for some zones only), and `UTC` for UTC itself.
 */
export function zoneName(at: Date | string | number, zone: string): string {
  if (new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone === 'UTC') return 'UTC';
  return parts(new Date(at), zone, 'shortOffset').timeZoneName ?? zone;
}

/** The canonical form of `tag` when `Intl` accepts it and has its data, else null. */
function acceptedLocale(tag: string): string | null {
  try {
    const [canonical] = Intl.DateTimeFormat.supportedLocalesOf(tag);
    return canonical && Intl.NumberFormat.supportedLocalesOf(canonical).length > 0 ? canonical : null;
  } catch {
    return null; // RangeError: not a language tag at all (`en-US@posix`, `C`)
  }
}

/**
 * The first of `candidates` that `Intl` accepts, repaired if need be, else `en`. A POSIX locale
 * (`en_US.UTF-8@euro`, `en-US@posix`) loses its codeset and modifier and gets hyphens; a tag still
 * refused, or one `Intl` has no data for, falls back to its base language, then to the next
 * candidate.
 */
export function safeLocale(...candidates: (string | null | undefined)[]): string {
  for (const candidate of candidates) {
    const raw = candidate?.trim();
    if (!raw) continue;
    const repaired = raw.replace(/@.*$/, '').replace(/\..*$/, '').replace(/_/g, '-');
    const base = repaired.split('-')[0]!;
    for (const tag of [raw, repaired, base]) {
      const accepted = tag ? acceptedLocale(tag) : null;
      if (accepted) return accepted;
    }
  }
  return 'en';
}

/**
 * The browser's locale as `Intl` accepts it: `navigator.language`, else the default `Intl` itself
 * resolves, else `en`. Chromium started under a POSIX locale reports `en-US@posix`, which every
 * `Intl` constructor refuses with "Invalid language tag".
 */
export function browserLocale(): string {
  const asked = typeof navigator === 'undefined' ? undefined : navigator.language;
  let fallback: string | undefined;
  try {
    fallback = new Intl.DateTimeFormat().resolvedOptions().locale;
  } catch {
    // no usable default either: safeLocale ends with `en`
  }
  return safeLocale(asked, fallback);
}
