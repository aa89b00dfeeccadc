import { durationMs, type Task } from '@punctual/contract';
import cronstrue from 'cronstrue';
import { RRule } from 'rrule';
import { formatInZone } from './time.js';

type Schedule = Task['schedule'];

const UNIT_WORDS: [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
  [1, 'millisecond'],
];

/** `Every 15 minutes`, `Every 90 seconds`: the largest unit that divides the interval. */
export function intervalWords(every: string): string {
  const ms = durationMs(every);
  if (!Number.isFinite(ms) || ms <= 0) return `Every ${every}`;
  const [size, unit] = UNIT_WORDS.find(([size]) => ms % size === 0)!;
  const n = ms / size;
  return n === 1 ? `Every ${unit}` : `Every ${n} ${unit}s`;
}

/**
 * A cron expression in words (cronstrue, which reads 5 and 6 fields, macros, `L`, `W` and `#`), or
 * null when it cannot say it (`H`, hashed by task name, is Punctual's own).
 */
export function cronWords(expression: string): string | null {
  try {
    return cronstrue.toString(expression, {
      use24HourTimeFormat: true,
      throwExceptionOnParseError: true,
      verbose: false,
    });
  } catch {
    // Not an error to show: the expression itself is shown beside the words.
    return null;
  }
}

/** The RRULE lines of RFC 5545 text in words (the rrule package), or null when it cannot say them. */
export function rruleWords(text: string): string | null {
  const rules = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => /^(RRULE:)?FREQ=/i.test(line));
  if (rules.length === 0) return null;
  try {
    return rules.map((line) => RRule.fromString(/^RRULE:/i.test(line) ? line : `RRULE:${line}`).toText()).join('; ');
  } catch {
    // As for cron: the rule itself is shown beside the words.
    return null;
  }
}

/** A task's schedule in words, in its own zone: what an operator reads before the expression. */
export function scheduleWords(schedule: Schedule): string {
  const zone = schedule.timezone;
  if (schedule.cron !== undefined) return `${cronWords(schedule.cron) ?? `Cron ${schedule.cron}`} (${zone})`;
  if (schedule.every !== undefined) return intervalWords(schedule.every);
  if (schedule.at !== undefined) return `Once, at ${formatInZone(schedule.at, zone)}`;
  if (schedule.rrule !== undefined) {
    const words = rruleWords(schedule.rrule);
    return `${words ? words.charAt(0).toUpperCase() + words.slice(1) : 'Recurrence rule'} (${zone})`;
  }
  return 'No schedule';
}

/**
 * The expression as written: `0 9 * * 1-5`, `every 15m`, the rule — or a one-off's instant as its
 * wall time in the task's zone (`2035-06-01 04:00:00 GMT+2`), never the bare UTC instant.
 */
export function scheduleExpression(schedule: Schedule): string {
  if (schedule.at !== undefined) return formatInZone(schedule.at, schedule.timezone);
  return (
    schedule.cron ?? (schedule.every !== undefined ? `every ${schedule.every}` : undefined) ?? schedule.rrule ?? ''
  );
}
