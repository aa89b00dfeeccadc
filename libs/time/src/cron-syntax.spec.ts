import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { compileCron } from './cron.js';
import { parseCron } from './cron-expression.js';
import { InvalidScheduleError } from './errors.js';
import { refusal } from './refusal.spec-helper.js';
import { compileSchedule, slotsBetween } from './schedule.js';

const KEY = 'nightly-report';
const ours = (cron: string, from: string, count: number, hashKey = KEY) =>
  slotsBetween(
    compileSchedule({ kind: 'cron', cron, timezone: 'UTC', hashKey }),
    new Date(from),
    new Date('2100-01-01T00:00:00Z'),
    count,
  ).map((d) => d.toISOString());
const theirs = (cron: string, from: string, count: number) => {
  const it = CronExpressionParser.parse(cron, { tz: 'UTC', hashSeed: KEY, currentDate: new Date(from) });
  return Array.from({ length: count }, () => it.next().toISOString());
};
const cronParserRefuses = (cron: string) =>
  expect(() => CronExpressionParser.parse(cron, { hashSeed: KEY }), cron).toThrow();

describe('cron syntax: cron-parser decides what an expression means', () => {
  it('an expression cron-parser reads fires here where it fires there (UTC, where no DST rule differs)', () => {
    const expressions = [
      '*/15 * * * *',
      '0 9 * * 1-5',
      '30 2 * * *',
      '0 0 1,15 * *',
      '0 0 L * *',
      '0 12 * * 5L',
      '0 9 * * 1#2',
      '0 9 * * MON#1',
      '0 0 * JAN-MAR/2 *',
      '5-55/10 8-18 * * *',
      '0 0 13 * 5',
      '*/20 * * * * *',
      '30 0 12 * * *',
      '0 0 ? * SUN',
      '0 0 * * 7',
      '0 0 * * 5-7',
      '0 0 * * *#2',
      '0 0 29 2 *',
      '10/7 * * * *',
      '0 0 L,15 * *',
      '0 0 * * 1,5L',
      '@hourly',
      '@daily',
      '@weekly',
      '@monthly',
      '@yearly',
      '@weekdays',
      '@weekends',
      '@secondly',
      'H H * * *',
      'H/15 H(1-5) * * H',
      'H(0-29)/10 H * H *',
      '0 H H * * *',
      '0 0 * * H#2',
      '0 0 * * HL',
      'H H(8-10) * * 1-5',
    ];
    for (const cron of expressions) {
      for (const from of ['2026-01-01T00:00:00Z', '2027-02-27T13:37:00Z'])
        expect(ours(cron, from, 8), `${cron} from ${from}`).toEqual(theirs(cron, from, 8));
    }
  });

  it('reads Quartz day-of-month items cron-parser refuses: 15W, LW and L-n', () => {
    for (const cron of ['0 9 15W * *', '0 9 LW * *', '0 9 L-2 * *']) cronParserRefuses(cron);
    expect(ours('0 9 15W,LW * *', '2026-02-01T00:00:00Z', 2)).toEqual([
      '2026-02-16T09:00:00.000Z',
      '2026-02-27T09:00:00.000Z',
    ]);
    expect(ours('0 9 L-2,1 * *', '2026-02-01T00:00:00Z', 2)).toEqual([
      '2026-02-01T09:00:00.000Z',
      '2026-02-26T09:00:00.000Z',
    ]);
  });

  it('reads lists cron-parser refuses: a value named twice, several #, # beside other weekdays', () => {
    for (const cron of ['*/15,30 * * * *', '0 0 * * 0,7', '0 9 * * 1#1,5#3', '0 9 * * 1#1,5']) cronParserRefuses(cron);
    expect(parseCron('*/15,30 * * * *', KEY)).toEqual(parseCron('*/15 * * * *', KEY));
    expect(parseCron('0 0 * * 0,7', KEY)).toEqual(parseCron('0 0 * * 0', KEY));
    // The first Monday and the third Friday of January 2026: the 5th and the 16th.
    expect(ours('0 9 * * 1#1,5#3', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-05T09:00:00.000Z',
      '2026-01-16T09:00:00.000Z',
    ]);
  });

  it('reads @midnight, macros in any case, and l, w, h in lower case', () => {
    for (const cron of ['@midnight', '@DAILY', '0 9 l * *', '0 9 15w * *', 'h h * * *'])
      cronParserRefuses(cron.replace('15w', 'l'));
    expect(parseCron('@midnight')).toEqual(parseCron('@daily'));
    expect(parseCron('@Daily')).toEqual(parseCron('@daily'));
    expect(parseCron('0 9 l * *')).toEqual(parseCron('0 9 L * *'));
    expect(parseCron('0 9 15w,lw * *')).toEqual(parseCron('0 9 15W,LW * *'));
    expect(parseCron('h h * * *', KEY)).toEqual(parseCron('H H * * *', KEY));
  });

  it('reads a hashed step over every weekday, which cron-parser refuses for naming Sunday as 0 and as 7', () => {
    cronParserRefuses('0 0 * * H/1');
    expect(parseCron('0 0 * * H/1', KEY).days.weekdays).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(parseCron('0 0 * * H(0-7)/1', KEY).days.weekdays).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('refuses what cron-parser reads loosely: nothing, fewer than 5 fields, junk beside a hashed range or step', () => {
    for (const [cron, message] of [
      ['', /cron expression/],
      ['* * * *', /4 fields/],
      ['H/8,0x1 * * * *', /"0x1" is not a number/],
      ['0 0 * * H(1-3),+3', /day-of-week field "\+3"/],
      ['H(0-29)/5.5 * * * *', /"H\(0-29\)\/5.5" is not a whole number/],
    ] as const) {
      expect(() => CronExpressionParser.parse(cron, { hashSeed: KEY }), cron).not.toThrow();
      expect(refusal(() => parseCron(cron, KEY)).message, cron).toMatch(message);
    }
  });

  it('refuses H without a task name, where cron-parser would draw at random', () => {
    expect(refusal(() => parseCron('H * * * *')).message).toMatch(/no name/);
    expect(refusal(() => compileSchedule({ kind: 'cron', cron: 'H 9 * * *', timezone: 'UTC' })).field).toBe(
      'schedule.cron',
    );
    expect(parseCron('0 9 * * THU').minutes).toEqual([0]);
  });

  it('refuses null and other non-strings with the typed error, never a TypeError', () => {
    // Warm the caches with the text an array reads as: a cached schedule must not answer for it.
    compileSchedule({ kind: 'cron', cron: '* * * * *', timezone: 'UTC', hashKey: KEY });
    compileCron('* * * * *', 'UTC', KEY);
    for (const cron of [null, undefined, 5, {}, ['* * * * *']] as unknown as string[]) {
      expect(refusal(() => parseCron(cron, KEY)).field).toBe('schedule.cron');
      expect(refusal(() => compileCron(cron, 'UTC', KEY)).field).toBe('schedule.cron');
      expect(refusal(() => compileSchedule({ kind: 'cron', cron, timezone: 'UTC', hashKey: KEY })).field).toBe(
        'schedule.cron',
      );
    }
    expect(() => parseCron('* * * * * * *')).toThrow(InvalidScheduleError);
  });

  it('names the item and what is wrong with it', () => {
    const cases: [string, RegExp][] = [
      ['61-5 * * * *', /minute field "61-5": 61 is outside 0-59/],
      ['60/7 * * * *', /minute field "60\/7": 60 is outside 0-59/],
      ['0 0 1 1-14 *', /month field "1-14": 14 is outside 1-12/],
      ['H(70-80) * * * *', /minute field "H\(70-80\)": no value of 70-80 fits 0-59/],
      ['H(9-3) * * * *', /range 9-3 runs backwards/],
      ['0 9 * * 1-5#2', /day-of-week field "1-5#2": # follows a single weekday/],
      ['*5 * * * *', /minute field "\*5": \* or \? stands alone/],
      ['0 9 L/2 * *', /day-of-month field "L\/2": "L" is not a number/],
      ['0 9 * JANUARY *', /month field "JANUARY": "JANUARY" is not a number or a name/],
      ['1/2/3 * * * *', /more than one "\/"/],
      ['1-2-3 * * * *', /a range is written "from-to"/],
      ['0 9 * * 1#0', /occurrence after # must be 1-5/],
      ['0 9 * * 9L', /day-of-week field "9L": 9 is outside 0-7/],
      ['0 9 L-31 * *', /L-n counts back at most 30 days/],
      ['0 9 32W * *', /day-of-month field "32W": 32 is outside 1-31/],
      ['0 9 1,5,,7 * *', /day-of-month field "1,5,,7": empty list item/],
      ['@REBOOT', /macro @REBOOT is not supported; use one of @yearly/],
    ];
    for (const [cron, message] of cases) {
      const error = refusal(() => parseCron(cron, KEY));
      expect(error.field, cron).toBe('schedule.cron');
      expect(error.message, cron).toMatch(message);
    }
  });
});
