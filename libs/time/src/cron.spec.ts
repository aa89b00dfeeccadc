import { describe, expect, it } from 'vitest';
import { parseCron, usesHash } from './cron-expression.js';
import { compileSchedule, slotsBetween } from './schedule.js';
import { refusal } from './refusal.spec-helper.js';

const utc = (cron: string, from: string, count: number, hashKey?: string) =>
  slotsBetween(
    compileSchedule({ kind: 'cron', cron, timezone: 'UTC', hashKey }),
    new Date(from),
    new Date('2100-01-01T00:00:00Z'),
    count,
  ).map((d) => d.toISOString());

describe('cron expressions', () => {
  it('L is the last day of the month, L-2 two days before it, 5L the last Friday', () => {
    expect(utc('0 9 L * *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-31T09:00:00.000Z',
      '2026-02-28T09:00:00.000Z',
      '2026-03-31T09:00:00.000Z',
    ]);
    expect(utc('0 9 L 2 *', '2027-06-01T00:00:00Z', 2)).toEqual([
      '2028-02-29T09:00:00.000Z',
      '2029-02-28T09:00:00.000Z',
    ]);
    expect(utc('0 9 L-2 * *', '2026-02-01T00:00:00Z', 2)).toEqual([
      '2026-02-26T09:00:00.000Z',
      '2026-03-29T09:00:00.000Z',
    ]);
    expect(utc('0 9 * * 5L', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-30T09:00:00.000Z',
      '2026-02-27T09:00:00.000Z',
      '2026-03-27T09:00:00.000Z',
    ]);
  });

  it('W is the weekday nearest the day, within the month; LW the last weekday', () => {
    // 15 Feb 2026 is a Sunday → Monday 16th; 15 Aug 2026 a Saturday → Friday 14th; 1 Aug 2026 a Saturday → Monday 3rd.
    expect(utc('0 9 15W * *', '2026-02-01T00:00:00Z', 1)).toEqual(['2026-02-16T09:00:00.000Z']);
    expect(utc('0 9 15W * *', '2026-08-01T00:00:00Z', 1)).toEqual(['2026-08-14T09:00:00.000Z']);
    expect(utc('0 9 1W * *', '2026-07-31T12:00:00Z', 1)).toEqual(['2026-08-03T09:00:00.000Z']);
    // 31 May 2026 is a Sunday: the last weekday is Friday 29th.
    expect(utc('0 9 LW * *', '2026-05-01T00:00:00Z', 1)).toEqual(['2026-05-29T09:00:00.000Z']);
  });

  it('# is the nth weekday of the month, and a fifth one only where it exists', () => {
    expect(utc('0 9 * * 5#3', '2026-01-01T00:00:00Z', 2)).toEqual([
      '2026-01-16T09:00:00.000Z',
      '2026-02-20T09:00:00.000Z',
    ]);
    expect(utc('0 9 * * MON#1', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-05T09:00:00.000Z']);
    // Fifth Fridays of 2026: January 30, May 29, July 31, October 30.
    expect(utc('0 9 * * 5#5', '2026-01-01T00:00:00Z', 4).map((d) => d.slice(0, 10))).toEqual([
      '2026-01-30',
      '2026-05-29',
      '2026-07-31',
      '2026-10-30',
    ]);
  });

  it('29 February fires in leap years only; 30 February is refused at once, not searched for ever', () => {
    expect(utc('0 0 29 2 *', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
      '2036-02-29T00:00:00.000Z',
    ]);
    for (const cron of ['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 31 2 *']) {
      const error = refusal(() => compileSchedule({ kind: 'cron', cron, timezone: 'UTC' }));
      expect(error.field).toBe('schedule.cron');
      expect(error.message).toMatch(/never matches/);
    }
  });

  it('day-of-month and day-of-week both restricted match either (Vixie cron)', () => {
    // The 13th of each month or any Friday.
    expect(utc('0 0 13 * 5', '2026-02-01T00:00:00Z', 4).map((d) => d.slice(0, 10))).toEqual([
      '2026-02-06',
      '2026-02-13',
      '2026-02-20',
      '2026-02-27',
    ]);
    expect(utc('0 0 * * 5', '2026-02-01T00:00:00Z', 2).map((d) => d.slice(0, 10))).toEqual([
      '2026-02-06',
      '2026-02-13',
    ]);
  });

  it('6 fields put seconds first', () => {
    expect(utc('*/20 * * * * *', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:01:20.000Z',
    ]);
    expect(utc('30 0 12 * * *', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T12:00:30.000Z']);
  });

  it('macros, names, ranges, steps and lists', () => {
    expect(utc('@hourly', '2026-01-01T00:10:00Z', 1)).toEqual(['2026-01-01T01:00:00.000Z']);
    expect(utc('@daily', '2026-01-01T00:10:00Z', 1)).toEqual(['2026-01-02T00:00:00.000Z']);
    expect(utc('@weekly', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T00:00:00.000Z']);
    expect(utc('@monthly', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-02-01T00:00:00.000Z']);
    expect(utc('@yearly', '2026-01-01T00:00:00Z', 1)).toEqual(['2027-01-01T00:00:00.000Z']);
    expect(utc('0 9 * JAN-MAR/2 MON-FRI', '2026-02-27T12:00:00Z', 1)).toEqual(['2026-03-02T09:00:00.000Z']);
    expect(utc('5,35 10-11 * * *', '2026-01-01T00:00:00Z', 4).map((d) => d.slice(11, 16))).toEqual([
      '10:05',
      '10:35',
      '11:05',
      '11:35',
    ]);
    expect(utc('0 0 * * 7', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T00:00:00.000Z']); // 7 is Sunday too
  });

  it('H is hashed from the task key: stable for one key, different across keys, within the field', () => {
    const minutes = (key: string) => parseCron('H H(8-10) * * *', key);
    expect(minutes('nightly-report')).toEqual(minutes('nightly-report'));
    const seen = new Set(Array.from({ length: 40 }, (_, i) => JSON.stringify(minutes(`task-${i}`).minutes)));
    expect(seen.size).toBeGreaterThan(20);
    for (let i = 0; i < 40; i += 1) {
      const { minutes: m, hours: h } = minutes(`task-${i}`);
      expect(m).toHaveLength(1);
      expect(m[0]).toBeGreaterThanOrEqual(0);
      expect(m[0]).toBeLessThanOrEqual(59);
      expect(h[0]).toBeGreaterThanOrEqual(8);
      expect(h[0]).toBeLessThanOrEqual(10);
    }
    // H/15: four values 15 apart from a hashed offset below 15.
    const steps = parseCron('H/15 * * * *', 'backup').minutes;
    expect(steps).toHaveLength(4);
    expect(steps.map((v) => v - steps[0]!)).toEqual([0, 15, 30, 45]);
    expect(steps[0]).toBeLessThan(15);
  });

  it('H picks the same values as cron-parser with hashSeed (an expression means the same in both)', async () => {
    const { CronExpressionParser } = await import('cron-parser');
    for (const [expr, key] of [
      ['H H * * *', 'a'],
      ['H/15 H(1-5) * * H', 'billing'],
      ['H(0-29)/10 H * H *', 'x'],
      ['0 H H * * *', 'six'],
    ] as const) {
      const theirs = CronExpressionParser.parse(expr, {
        hashSeed: key,
        tz: 'UTC',
        currentDate: new Date('2026-01-01T00:00:00Z'),
      });
      const ours = compileSchedule({ kind: 'cron', cron: expr, timezone: 'UTC', hashKey: key });
      let cursor = new Date('2026-01-01T00:00:00Z');
      for (let i = 0; i < 5; i += 1) {
        const next = ours.next(cursor)!;
        expect(next.toISOString(), `${expr} ${key}`).toBe(theirs.next().toISOString());
        cursor = next;
      }
    }
  });

  it('only an H makes the task key part of the meaning (so other tasks share one compiled schedule)', () => {
    expect(['H * * * *', '0 H(8-10) * * *', '0 9 * * H#2'].every(usesHash)).toBe(true);
    expect(['0 9 * * THU', '@hourly', '@monthly', '*/5 * * * *'].some(usesHash)).toBe(false);
    const spec = { kind: 'cron', cron: '0 9 * * THU', timezone: 'UTC' } as const;
    expect(compileSchedule({ ...spec, hashKey: 'a' })).toBe(compileSchedule({ ...spec, hashKey: 'b' }));
    expect(compileSchedule({ ...spec, cron: 'H 9 * * *', hashKey: 'a' })).not.toBe(
      compileSchedule({ ...spec, cron: 'H 9 * * *', hashKey: 'b' }),
    );
  });

  it('refuses CRON_TZ= and TZ= and points to schedule.timezone', () => {
    for (const cron of ['CRON_TZ=Europe/Berlin 0 9 * * *', 'TZ=UTC 0 9 * * *', 'tz=UTC 0 9 * * *']) {
      const error = refusal(() => compileSchedule({ kind: 'cron', cron, timezone: 'UTC' }));
      expect(error.field).toBe('schedule.cron');
      expect(error.message).toContain('schedule.timezone');
    }
  });

  it('refuses malformed expressions with a message naming the field', () => {
    const cases: [string, RegExp][] = [
      ['* * * *', /4 fields/],
      ['* * * * * * *', /7 fields/],
      ['60 * * * *', /minute field "60"/],
      ['* 24 * * *', /hour field/],
      ['* * 0 * *', /day-of-month field/],
      ['* * * 13 *', /month field/],
      ['* * * * 8', /day-of-week field/],
      ['*/0 * * * *', /step/],
      ['5-1 * * * *', /backwards/],
      ['* * * FOO *', /"FOO"/],
      ['1,,2 * * * *', /empty/],
      ['* * * * 5#6', /1-5/],
      ['* * * * L', /bare L/],
      ['@reboot', /not supported/],
      ['', /cron expression/],
    ];
    for (const [cron, message] of cases) {
      const error = refusal(() => compileSchedule({ kind: 'cron', cron, timezone: 'UTC' }));
      expect(error.field, cron).toBe('schedule.cron');
      expect(error.message, cron).toMatch(message);
    }
  });

  it('refuses a zone that is not an IANA name', () => {
    for (const timezone of ['Mars/Olympus', '', '+02:00']) {
      expect(refusal(() => compileSchedule({ kind: 'cron', cron: '0 9 * * *', timezone })).field).toBe(
        'schedule.timezone',
      );
    }
  });

  it('classifies the hour field: * (or every hour) follows elapsed time, anything else is fixed-time', () => {
    expect(parseCron('*/15 * * * *').wildcardHour).toBe(true);
    expect(parseCron('0 0-23 * * *').wildcardHour).toBe(true);
    expect(parseCron('@hourly').wildcardHour).toBe(true);
    expect(parseCron('0 */2 * * *').wildcardHour).toBe(false);
    expect(parseCron('@daily').wildcardHour).toBe(false);
  });
});
