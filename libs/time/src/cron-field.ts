import { InvalidScheduleError } from './errors.js';

/** One numeric field of a cron expression: its name, bounds and (for month and weekday) names. */
export interface CronFieldShape {
  name: string;
  min: number;
  max: number;
  /** Three-letter names, the first meaning `aliasBase`. */
  aliases?: readonly string[];
  aliasBase?: number;
}

export const SECOND: CronFieldShape = { name: 'second', min: 0, max: 59 };
export const MINUTE: CronFieldShape = { name: 'minute', min: 0, max: 59 };
export const HOUR: CronFieldShape = { name: 'hour', min: 0, max: 23 };
export const DAY_OF_MONTH: CronFieldShape = { name: 'day-of-month', min: 1, max: 31 };
export const MONTH: CronFieldShape = {
  name: 'month', min: 1, max: 12, aliasBase: 1,
  aliases: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
};
/** 0 and 7 are both Sunday, as in Vixie cron and cron-parser. */
export const DAY_OF_WEEK: CronFieldShape = { name: 'day-of-week', min: 0, max: 7, aliasBase: 0, aliases: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] };

const HASHED = /^H(?:\((\d+)-(\d+)\))?(?:\/(\d+))?$/i;

/** An error about one field, always reported on `schedule.cron`. */
export function fieldError(shape: CronFieldShape, text: string, why: string): InvalidScheduleError {
  return new InvalidScheduleError('schedule.cron', `schedule.cron ${shape.name} field "${text}": ${why}`);
}

/**
 * The values one list item stands for: `*`, `?`, `5`, `MON`, `1-5`, `*\/15`, `10/5`, `1-30/2`, or a
 * hashed `H`, `H/15`, `H(0-29)`, `H(0-29)/10`. `hash` is the field's value in [0, 1) from the
 * task's key; hashed items resolve exactly as cron-parser's `hashSeed` does, so an expression means
 * the same thing here and there.
 */
export function expandItem(item: string, shape: CronFieldShape, hash: number): number[] {
  const hashed = HASHED.exec(item);
  if (hashed) return expandHashed(item, shape, hash, hashed);
  const parts = item.split('/');
  if (parts.length > 2) throw fieldError(shape, item, 'more than one "/"');
  const [base, stepText] = parts as [string, string | undefined];
  const step = stepText === undefined ? 1 : positiveInteger(shape, item, stepText);
  let lo: number;
  let hi: number;
  if (base === '*' || base === '?') [lo, hi] = [shape.min, shape.max];
  else if (base.includes('-')) {
    const bounds = base.split('-');
    if (bounds.length !== 2) throw fieldError(shape, item, 'a range is written "from-to"');
    [lo, hi] = [valueOf(shape, item, bounds[0]!), valueOf(shape, item, bounds[1]!)];
    if (lo > hi) throw fieldError(shape, item, `range ${lo}-${hi} runs backwards`);
  } else {
    lo = valueOf(shape, item, base);
    hi = stepText === undefined ? lo : shape.max;
  }
  const values: number[] = [];
  for (let v = lo; v <= hi; v += step) values.push(v);
  return values;
}

/** A single value (a number or a name) within the field's bounds. */
export function valueOf(shape: CronFieldShape, item: string, token: string): number {
  let value: number;
  if (/^\d+$/.test(token)) value = Number(token);
  else {
    const index = shape.aliases?.indexOf(token.toLowerCase()) ?? -1;
    if (index < 0) throw fieldError(shape, item, `"${token}" is not a number${shape.aliases ? ' or a name' : ''}`);
    value = index + shape.aliasBase!;
  }
  if (value < shape.min || value > shape.max) throw fieldError(shape, item, `${value} is outside ${shape.min}-${shape.max}`);
  return value;
}

function positiveInteger(shape: CronFieldShape, item: string, text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw fieldError(shape, item, `step "${text}" must be a whole number of at least 1`);
  return Number(text);
}

function expandHashed(item: string, shape: CronFieldShape, hash: number, m: RegExpExecArray): number[] {
  let [min, max] = [shape.min, shape.max];
  if (m[1] !== undefined) {
    const [from, to] = [Number(m[1]), Number(m[2])];
    if (from > to) throw fieldError(shape, item, `range ${from}-${to} runs backwards`);
    // Narrowed to the field, as cron-parser does (H(0-5) in day-of-month picks from 1-5).
    [min, max] = [Math.max(from, shape.min), Math.min(to, shape.max)];
    if (min > max) throw fieldError(shape, item, `no value of ${from}-${to} fits ${shape.min}-${shape.max}`);
  }
  const pick = () => Math.floor(hash * (max - min + 1)) + min;
  if (m[3] === undefined) return [pick()];
  const step = positiveInteger(shape, item, m[3]);
  const values: number[] = [];
  for (let v = Math.floor(min / step) * step + Math.floor(hash * step); v <= max; v += step) if (v >= min) values.push(v);
  // A step wider than the range has no aligned value inside it: one hashed value instead.
  return values.length > 0 ? values : [pick()];
}

/**
 * The per-field hash values of a task key: cron-parser's seeded generator (FNV-1a seed, mulberry32),
 * one draw per field in the order second, minute, hour, month, day-of-month, day-of-week.
 */
export function fieldHashes(key: string): { second: number; minute: number; hour: number; month: number; dayOfMonth: number; dayOfWeek: number } {
  let seed = 2166136261 >>> 0;
  for (let i = 0; i < key.length; i += 1) {
    seed ^= key.charCodeAt(i);
    seed = Math.imul(seed, 16777619);
  }
  seed >>>= 0;
  const draw = () => {
    let t = (seed += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { second: draw(), minute: draw(), hour: draw(), month: draw(), dayOfMonth: draw(), dayOfWeek: draw() };
}
