import { CronDayOfMonth, CronDayOfWeek, CronHour, CronMinute, CronMonth, CronSecond } from 'cron-parser';
import type { CronFieldKey } from './cron-fields.js';
import { InvalidScheduleError } from './errors.js';

/** An error about one field, always reported on `schedule.cron`: `minute field "60": 60 is outside 0-59`. */
export function cronFieldError(field: string, text: string, why: string): InvalidScheduleError {
  return new InvalidScheduleError('schedule.cron', `schedule.cron ${field} field "${text}": ${why}`);
}

const BOUNDS: Record<CronFieldKey, { min: number; max: number }> = {
  second: CronSecond,
  minute: CronMinute,
  hour: CronHour,
  dayOfMonth: CronDayOfMonth,
  month: CronMonth,
  dayOfWeek: CronDayOfWeek,
};

type Reason = (match: RegExpExecArray, item: string, field: CronFieldKey) => string;

/** cron-parser's refusals of one item, in the words of a person reading a crontab. First match wins. */
const REASONS: [RegExp, Reason][] = [
  [/got value (\d+)L? expected range (\d+-\d+)/, (m) => `${m[1]} is outside ${m[2]}`],
  // A hashed range is narrowed to the field, so only its direction can be wrong.
  [/Invalid range: (\d+)-(\d+), min > max/, (m) => `range ${m[1]}-${m[2]} runs backwards`],
  [
    /got range (\d+)-(\d+) expected range|Invalid range: (\d+)-(\d+), min/,
    (m, _item, field) => rangeReason(Number(m[1] ?? m[3]), Number(m[2] ?? m[4]), field),
  ],
  // `L/2` and `/5` become the ranges `L-31` and `-59`: the start of the step is what is wrong.
  [
    /got range \S+ expected range/,
    (_m, item, field) =>
      item.includes('-')
        ? 'a range is written "from-to", each end a number or a name'
        : notANumber(item.split('/')[0]!, field),
  ],
  [
    /Invalid range: (\d+)-(\d+), no usable value/,
    (m, _item, field) => `no value of ${m[1]}-${m[2]} fits ${BOUNDS[field].min}-${BOUNDS[field].max}`,
  ],
  [/Invalid range: /, () => 'a range is written "from-to"'],
  [/Invalid repeat: /, () => 'more than one "/"'],
  [
    /cannot repeat at every|Invalid step: /,
    (_m, item) => `step "${item.slice(item.indexOf('/') + 1)}" must be a whole number of at least 1`,
  ],
  [/cannot resolve alias "([a-z]+)"/, (m, item) => `"${wordOf(item, m[1]!)}" is not a number or a name`],
  [/Invalid characters|got value \S+ expected range/, (_m, item, field) => notANumber(item, field)],
  [/Invalid wildcard/, () => '* or ? stands alone, or before a step as in */15'],
  [/occurrence number \(#\)/, () => 'the occurrence after # must be 1-5'],
  [/`#` and `(.)` special characters are incompatible/, (m) => `# follows a single weekday, as in 5#3, not "${m[1]}"`],
  [/duplicate values found: (\S+)/, (m) => `${m[1]} is named twice`],
  [/unexpected standalone L/, () => 'a bare L is ambiguous; write 5L for the last Friday'],
];

/** An end outside the field before a range that runs backwards: `61-5` in minutes is about 61. */
function rangeReason(from: number, to: number, field: CronFieldKey): string {
  const { min, max } = BOUNDS[field];
  const outside = [from, to].find((v) => v < min || v > max);
  if (outside !== undefined) return `${outside} is outside ${min}-${max}`;
  return `range ${from}-${to} runs backwards`;
}

function notANumber(text: string, field: CronFieldKey): string {
  return `"${text}" is not a number${field === 'month' || field === 'dayOfWeek' ? ' or a name' : ''}`;
}

/** Why cron-parser refused `item` of `field`; its own message when it is not one of the known kinds. */
export function cronParserReason(field: CronFieldKey, item: string, message: string): string {
  for (const [pattern, reason] of REASONS) {
    const match = pattern.exec(message);
    if (match) return reason(match, item, field);
  }
  return message;
}

/** The word of `item` as written (`FOO`), where cron-parser quotes the lower-case three letters (`foo`) it could not resolve. */
function wordOf(item: string, letters: string): string {
  return item.match(/[a-z]+/gi)?.find((word) => word.toLowerCase().includes(letters)) ?? letters;
}
