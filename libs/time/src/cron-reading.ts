import { CronExpressionParser, type CronFieldCollection } from 'cron-parser';
import { CRON_FIELDS, type CronFieldKey, type CronFields, CronFieldsBuilder } from './cron-fields.js';
import { cronFieldError, cronParserReason } from './cron-refusal.js';

/**
 * cron-parser's reading of a whole expression (six fields, or a macro), or null when it refuses
 * it. It reads `L`, `W` and `H` in capitals only (names in any case); `hashKey` is its `hashSeed`.
 * A fraction (junk beside a hashed step, `H/5.5`, slips past its character check) is a refusal.
 */
export function readWhole(expression: string, hashKey: string): CronFields | null {
  let parsed: CronFieldCollection;
  try {
    parsed = parse(expression, hashKey);
  } catch {
    // Not lost: the caller reads the expression item by item, which names what was refused.
    return null;
  }
  if (!CRON_FIELDS.every(({ key }) => wholeNumbers(parsed, key))) return null;
  const builder = new CronFieldsBuilder();
  for (const { key } of CRON_FIELDS) builder.add(parsed, key);
  return builder.build(!parsed.dayOfMonth.isWildcard, !parsed.dayOfWeek.isWildcard);
}

/**
 * The fields of a six-field expression (seconds first), read one list item at a time: each item
 * by cron-parser, alone in its field (so `H` draws the value `hashKey` gives that field in a whole
 * expression), except the day-of-month items only Punctual reads (`15W`, `LW`, `L-3`). A list
 * means the union of its items, as in cron-parser; reading items alone also admits what
 * cron-parser refuses in a list — a value named twice (`*\/15,30`) and several `#` (`1#1,5#3`).
 * Otherwise throws for the first item cron-parser refuses, naming its field.
 */
export function readByItem(six: readonly string[], hashKey: string): CronFields {
  const builder = new CronFieldsBuilder();
  CRON_FIELDS.forEach(({ key, name }, position) => {
    const text = six[position]!;
    for (const item of text.split(',')) {
      if (item === '') throw cronFieldError(name, text, 'empty list item');
      if (key === 'dayOfMonth' && addPunctualDay(builder, item)) continue;
      builder.add(parseItem(position, item, hashKey), key);
    }
  });
  // cron-parser's rule: a day field restricts unless it is exactly `*` or `?`.
  const wildcard = (text: string) => text === '*' || text === '?';
  return builder.build(!wildcard(six[3]!), !wildcard(six[5]!));
}

/** Every field but the item's holds one value, so that only the item's field is expanded. */
const PLACEHOLDERS = ['0', '0', '0', '1', '1', '0'];

function parseItem(position: number, item: string, hashKey: string): CronFieldCollection {
  const { key, name } = CRON_FIELDS[position]!;
  const alone = (text: string) =>
    parse(PLACEHOLDERS.map((p, i) => (i === position ? text.toUpperCase() : p)).join(' '), hashKey);
  let parsed: CronFieldCollection;
  try {
    parsed = alone(item);
  } catch (error) {
    const message = (error as Error).message;
    const sunday = key === 'dayOfWeek' ? /^H(?:\(0+-\d+\))?\/(\d+)$/i.exec(item) : null;
    // cron-parser folds 7 into 0 after listing a hashed step's values, so a step that reaches
    // both (`H/1`) repeats Sunday and is refused as a duplicate; stopping at 6 lists the same days.
    if (!sunday || !/duplicate values/.test(message))
      throw cronFieldError(name, item, cronParserReason(key, item, message));
    parsed = alone(`H(0-6)/${sunday[1]}`);
  }
  if (!wholeNumbers(parsed, key)) throw cronFieldError(name, item, `"${item}" is not a whole number`);
  return parsed;
}

/** The start date is never used: only the fields are. */
function parse(expression: string, hashKey: string): CronFieldCollection {
  return CronExpressionParser.parse(expression, { hashSeed: hashKey || undefined, currentDate: 0 }).fields;
}

function wholeNumbers(parsed: CronFieldCollection, key: CronFieldKey): boolean {
  return parsed[key].values.every((v: number | string) => typeof v === 'string' || Number.isInteger(v));
}

/** Quartz's `15W` (nearest weekday), `LW` (last weekday) and `L-3` (three days before the last); false for any other item. */
function addPunctualDay(builder: CronFieldsBuilder, item: string): boolean {
  const fromLast = /^L-(\d+)$/i.exec(item);
  const nearest = /^(\d+)W$/i.exec(item);
  if (fromLast) {
    const n = Number(fromLast[1]);
    if (n > 30) throw cronFieldError('day-of-month', item, 'L-n counts back at most 30 days');
    builder.fromLast.add(n);
  } else if (nearest) {
    const day = Number(nearest[1]);
    if (day < 1 || day > 31) throw cronFieldError('day-of-month', item, `${day} is outside 1-31`);
    builder.nearestWeekday.add(day);
  } else if (/^LW$/i.test(item)) builder.lastWeekday = true;
  else return false;
  return true;
}
