import rrulePkg, { type Options } from 'rrule';
import { InvalidScheduleError } from './errors.js';
import { assertTimeZone } from './zone.js';
import { wallOf } from './zone-timeline.js';

const { RRule } = rrulePkg;

/** An RFC 5545 recurrence reduced to wall-clock terms: every date is a local wall time (ms, UTC-labelled). */
export interface Recurrence {
  /** `DTSTART`, or null to default to the task's anchor. */
  dtstart: number | null;
  rules: Partial<Options>[];
  rdates: number[];
  exdates: number[];
}

const DATE = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$/i;

/**
 * Reads `DTSTART[;TZID=…]:…`, `RRULE:…` (or a bare `FREQ=…`), `RDATE` and `EXDATE` lines. Dates
 * with a `TZID` or none are wall times in `timezone` (a different `TZID` is refused rather than
 * silently converted); dates ending in `Z` are instants and become that instant's wall time. The
 * `rrule` package then runs on wall time alone, without its own zone handling.
 */
export function parseRecurrence(text: string, timezone: string): Recurrence {
  if (typeof text !== 'string' || text.trim() === '')
    throw invalid('must be RFC 5545 text such as "RRULE:FREQ=DAILY;BYHOUR=9"');
  const recurrence: Recurrence = { dtstart: null, rules: [], rdates: [], exdates: [] };
  for (const line of unfold(text)) {
    const colon = line.indexOf(':');
    const [head, value] = colon < 0 ? ['RRULE', line] : [line.slice(0, colon), line.slice(colon + 1)];
    const [name, ...params] = head.split(';');
    switch (name!.toUpperCase()) {
      case 'DTSTART':
        if (recurrence.dtstart !== null) throw invalid('has more than one DTSTART');
        recurrence.dtstart = dateValue(value, params, timezone);
        break;
      case 'RRULE':
        recurrence.rules.push(ruleOptions(value, timezone));
        break;
      case 'RDATE':
      case 'EXDATE':
        for (const v of value.split(','))
          (name!.toUpperCase() === 'RDATE' ? recurrence.rdates : recurrence.exdates).push(
            dateValue(v, params, timezone),
          );
        break;
      default:
        throw invalid(`line "${line}" is not DTSTART, RRULE, RDATE or EXDATE`);
    }
  }
  if (recurrence.rules.length === 0 && recurrence.rdates.length === 0) throw invalid('needs an RRULE (or RDATE)');
  return recurrence;
}

/** Lines, with RFC 5545 folding undone; a literal `\n` (from a JSON string written by hand) also separates lines. */
function unfold(text: string): string[] {
  const lines: string[] = [];
  for (const raw of text.split(/\r?\n|\\n/)) {
    if (/^[ \t]/.test(raw) && lines.length > 0) lines[lines.length - 1] += raw.slice(1);
    else lines.push(raw);
  }
  return lines.map((l) => l.trim()).filter(Boolean);
}

function ruleOptions(value: string, timezone: string): Partial<Options> {
  if (!/^FREQ=|;FREQ=/i.test(value)) throw invalid(`RRULE "${value}" has no FREQ`);
  // A UTC UNTIL is an instant: compare occurrences with its wall time instead.
  const untilMatch = /(?:^|;)UNTIL=([^;]*)/i.exec(value);
  let rest = value;
  let until: Date | undefined;
  if (untilMatch) {
    until = new Date(dateValue(untilMatch[1]!, [], timezone));
    rest = value.replace(untilMatch[0], '').replace(/;;+/g, ';').replace(/^;|;$/g, '');
  }
  let options: Partial<Options>;
  try {
    options = RRule.parseString(rest.toUpperCase());
  } catch (error) {
    throw invalid(`RRULE "${value}": ${(error as Error).message}`);
  }
  if (options.freq === undefined || options.freq === null) throw invalid(`RRULE "${value}" has no valid FREQ`);
  if (options.count != null && until) throw invalid(`RRULE "${value}" sets both COUNT and UNTIL`);
  if (options.dtstart || options.tzid) throw invalid('DTSTART and TZID belong on their own DTSTART line');
  return until ? { ...options, until } : options;
}

function dateValue(value: string, params: string[], timezone: string): number {
  for (const param of params) {
    const [key, v] = param.split('=') as [string, string | undefined];
    if (key.toUpperCase() === 'TZID') {
      assertTimeZone(v ?? '', 'schedule.rrule');
      if (canonical(v!) !== canonical(timezone)) {
        throw invalid(`uses TZID=${v} but schedule.timezone is ${timezone}; set schedule.timezone to ${v}`);
      }
    } else if (!(key.toUpperCase() === 'VALUE' && /^DATE(-TIME)?$/i.test(v ?? '')))
      throw invalid(`parameter ${param} is not supported`);
  }
  const m = DATE.exec(value.trim());
  if (!m) throw invalid(`"${value}" is not a date such as 20260101T090000`);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((x) => Number(x ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  if (new Date(wall).getUTCDate() !== d || h > 23 || mi > 59 || s > 59) throw invalid(`"${value}" is not a valid date`);
  return m[7] ? wallOf(wall, timezone) : wall;
}

const canonical = (zone: string) => new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;

function invalid(why: string): InvalidScheduleError {
  return new InvalidScheduleError('schedule.rrule', `schedule.rrule ${why}`);
}
