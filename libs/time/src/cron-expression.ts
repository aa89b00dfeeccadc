import type { CronFields } from './cron-fields.js';
import { readByItem, readWhole } from './cron-reading.js';
import { InvalidScheduleError } from './errors.js';

export type { CronDays, CronFields } from './cron-fields.js';

/** cron-parser's predefined expressions, which it expands, and `@midnight` (Vixie cron's `@daily`), which it lacks. */
const MACROS = [
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@midnight',
  '@hourly',
  '@minutely',
  '@secondly',
  '@weekdays',
  '@weekends',
];
/** cron-parser's own limit. */
const MAX_LENGTH = 1024;

/**
 * Parses a 5-field (minute first) or 6-field (seconds first) expression or a macro such as
 * `@daily` with cron-parser (`CronExpressionParser.parse`), so an expression means here what it
 * means there; Punctual then enumerates the parsed fields on wall-clock time. `hashKey` (the task
 * name) is cron-parser's `hashSeed`: it fixes what `H` stands for. What Punctual reads beyond
 * cron-parser (`15W`, `LW`, `L-3`, a value listed twice, several `#` in a list, `@midnight`,
 * lower case) and what it refuses (an empty expression, fewer than 5 fields, junk beside a hashed
 * step, `H` without a name) is listed in the README's "Cron syntax". Throws
 * {@link InvalidScheduleError} on `schedule.cron` with a message naming the bad field and item.
 */
export function parseCron(expression: string, hashKey = ''): CronFields {
  if (typeof expression !== 'string' || expression.trim() === '' || expression.length > MAX_LENGTH) {
    throw new InvalidScheduleError(
      'schedule.cron',
      `schedule.cron must be a cron expression such as "*/15 * * * *" (at most ${MAX_LENGTH} characters)`,
    );
  }
  if (/(^|\s)(CRON_TZ|TZ)\s*=/i.test(expression)) {
    throw new InvalidScheduleError(
      'schedule.cron',
      'schedule.cron must not set CRON_TZ= or TZ=; give the zone in schedule.timezone',
    );
  }
  const trimmed = expression.trim();
  if (trimmed.startsWith('@')) {
    if (!MACROS.includes(trimmed.toLowerCase())) {
      throw new InvalidScheduleError(
        'schedule.cron',
        `schedule.cron macro ${trimmed} is not supported; use one of ${MACROS.join(', ')}`,
      );
    }
    return readWhole(trimmed.toLowerCase() === '@midnight' ? '@daily' : trimmed.toLowerCase(), '')!;
  }
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidScheduleError(
      'schedule.cron',
      `schedule.cron has ${fields.length} fields; it needs 5 (minute first) or 6 (seconds first), or a macro such as @daily`,
    );
  }
  if (hashKey === '' && usesHash(trimmed)) {
    // Without a seed cron-parser draws H at random: a schedule must mean one thing.
    throw new InvalidScheduleError(
      'schedule.cron',
      'schedule.cron uses H, which is hashed from the task name, and no name was given',
    );
  }
  const six = fields.length === 6 ? fields : ['0', ...fields];
  // One call to cron-parser in the usual case; item by item where it checks characters loosely,
  // and when it refuses (to name the bad item, or to read what only Punctual reads).
  if (six.some(hasItemBesideHashedStep)) return readByItem(six, hashKey);
  return readWhole(six.join(' ').toUpperCase(), hashKey) ?? readByItem(six, hashKey);
}

/** A field with a hashed range or step, where cron-parser reads other items loosely (`0x1` beside `H/8` as 1, `+3` as 3). */
function hasItemBesideHashedStep(field: string): boolean {
  return /H[(/]/i.test(field) && field.split(',').some((item) => !/^H(\(\d+-\d+\))?(\/\d+)?$/i.test(item));
}

/**
 * Whether `hashKey` can change what `expression` means: only an `H` does (the letter also occurs
 * in `THU` and in macros such as `@monthly`, which hash nothing). Lets tasks share a schedule.
 */
export function usesHash(expression: string): boolean {
  return (
    typeof expression === 'string' && !expression.trim().startsWith('@') && /h/i.test(expression.replace(/thu/gi, ''))
  );
}
