import { describe, expect, it } from 'vitest';
import { InvalidScheduleError } from './errors.js';
import { checkExcludedDays, excludedDatesOfYear } from './excluded-days.js';
import type { ExcludedDays } from './schedule-spec.js';
import { compileSchedule, countSlots, slotsBetween } from './schedule.js';
import type { ScheduleSpec } from './schedule-spec.js';
import { formatLocal } from './zone.js';

const calendar = (
  timezone: string,
  dates: string[],
  rrules: string[] = [],
  key = `${timezone}:${dates}:${rrules}`,
): ExcludedDays => ({ key, timezone, dates, rrules });
const slots = (spec: ScheduleSpec, from: string, n: number) =>
  slotsBetween(compileSchedule(spec), new Date(from), new Date(8.64e15), n);
const locals = (spec: ScheduleSpec, from: string, n: number, zone: string) =>
  slots(spec, from, n).map((d) => formatLocal(d, zone).slice(0, 16));

describe('excluded days (calendars)', () => {
  it('drops the slots on the excluded local dates, in the task zone by default', () => {
    const spec: ScheduleSpec = {
      kind: 'cron',
      cron: '0 9 * * *',
      timezone: 'Europe/Berlin',
      exclude: [calendar('Europe/Berlin', ['2026-12-25', '2026-12-26'])],
    };
    expect(locals(spec, '2026-12-23T12:00:00Z', 3, 'Europe/Berlin')).toEqual([
      '2026-12-24T09:00',
      '2026-12-27T09:00',
      '2026-12-28T09:00',
    ]);
  });

  it("judges a slot by its local date in the calendar's zone, not the task's", () => {
    // A Tokyo holiday on 2026-12-25 runs from 2026-12-24T15:00Z to 2026-12-25T15:00Z: in Los Angeles
    // that is 07:00 on the 24th to 07:00 on the 25th, so 09:00 on the 24th (02:00 on the 25th in
    // Tokyo) is dropped and 09:00 on the 25th (02:00 on the 26th in Tokyo) runs.
    const spec: ScheduleSpec = {
      kind: 'cron',
      cron: '0 9 * * *',
      timezone: 'America/Los_Angeles',
      exclude: [calendar('Asia/Tokyo', ['2026-12-25'])],
    };
    expect(locals(spec, '2026-12-23T00:00:00Z', 3, 'America/Los_Angeles')).toEqual([
      '2026-12-23T09:00',
      '2026-12-25T09:00',
      '2026-12-26T09:00',
    ]);
  });

  it('excludes a whole local day across a clock change: 23 hours in spring, 25 in autumn', () => {
    const hourly = (date: string): ScheduleSpec => ({
      kind: 'cron',
      cron: '0 * * * *',
      timezone: 'UTC',
      exclude: [calendar('Europe/Berlin', [date])],
    });
    const spring = compileSchedule(hourly('2026-03-29'));
    expect(countSlots(spring, new Date('2026-03-28T00:00:00Z'), new Date('2026-03-31T00:00:00Z'))).toBe(72 - 23);
    expect(spring.next(new Date('2026-03-28T22:30:00Z'))).toEqual(new Date('2026-03-29T22:00:00Z'));
    const autumn = compileSchedule(hourly('2026-10-25'));
    expect(countSlots(autumn, new Date('2026-10-24T00:00:00Z'), new Date('2026-10-27T00:00:00Z'))).toBe(72 - 25);
    expect(autumn.next(new Date('2026-10-24T21:30:00Z'))).toEqual(new Date('2026-10-25T23:00:00Z'));
  });

  it('finds the start of a day whose midnight does not exist (America/Santiago, 2026-09-06)', () => {
    const spec: ScheduleSpec = {
      kind: 'cron',
      cron: '30 * * * *',
      timezone: 'America/Santiago',
      exclude: [calendar('America/Santiago', ['2026-09-05'])],
    };
    // The 5th ends at its 24:00, which the clocks skip to 01:00 on the 6th: the first slot after is 01:30.
    expect(locals(spec, '2026-09-05T12:00:00Z', 2, 'America/Santiago')).toEqual([
      '2026-09-06T01:30',
      '2026-09-06T02:30',
    ]);
  });

  it('excludes the occurrences of day rules: weekends and a yearly date', () => {
    const spec: ScheduleSpec = {
      kind: 'cron',
      cron: '0 9 * * *',
      timezone: 'Europe/Berlin',
      exclude: [calendar('Europe/Berlin', [], ['FREQ=WEEKLY;BYDAY=SA,SU', 'RRULE:FREQ=YEARLY;BYMONTH=1;BYMONTHDAY=1'])],
    };
    expect(locals(spec, '2026-12-30T12:00:00Z', 4, 'Europe/Berlin')).toEqual([
      '2026-12-31T09:00',
      '2027-01-04T09:00',
      '2027-01-05T09:00',
      '2027-01-06T09:00',
    ]);
  });

  it('counts exactly what it walks, with two calendars in two zones', () => {
    const exclude = [
      calendar('Asia/Tokyo', ['2026-03-28', '2026-03-30']),
      calendar('Europe/Berlin', ['2026-03-29'], ['FREQ=MONTHLY;BYMONTHDAY=2']),
    ];
    for (const inner of [
      { kind: 'cron', cron: '*/10 * * * *', timezone: 'America/New_York' },
      { kind: 'every', everyMs: 7 * 60_000, anchor: new Date('2026-01-01T00:00:00Z') },
    ] as const) {
      const schedule = compileSchedule({ ...inner, exclude });
      let total = 0;
      for (const [from, to] of [
        ['2026-03-27T10:17:00Z', '2026-04-03T01:00:00Z'],
        ['2026-03-29T00:00:00Z', '2026-03-29T05:00:00Z'],
        ['2026-04-01T00:00:00Z', '2026-04-02T23:00:00Z'],
      ]) {
        const walked = slotsBetween(schedule, new Date(from), new Date(to), 1e6).length;
        expect(countSlots(schedule, new Date(from), new Date(to)), `${inner.kind} ${from}..${to}`).toBe(walked);
        total += walked;
      }
      expect(total).toBeGreaterThan(0);
    }
  });

  it('has no next slot when every day for ten years is excluded', () => {
    const schedule = compileSchedule({
      kind: 'cron',
      cron: '0 9 * * *',
      timezone: 'UTC',
      exclude: [calendar('UTC', [], ['FREQ=DAILY'])],
    });
    expect(schedule.next(new Date('2026-01-01T00:00:00Z'))).toBeNull();
    const until2027 = compileSchedule({
      kind: 'cron',
      cron: '0 9 * * *',
      timezone: 'UTC',
      exclude: [calendar('UTC', [], ['FREQ=DAILY;UNTIL=20261231'])],
    });
    expect(until2027.next(new Date('2026-01-01T00:00:00Z'))).toEqual(new Date('2027-01-01T09:00:00Z'));
  });

  it('refuses a bad calendar naming the field', () => {
    const refusal = (days: Omit<ExcludedDays, 'key'>) => {
      try {
        checkExcludedDays(days);
      } catch (error) {
        return error instanceof InvalidScheduleError ? `${error.field}: ${error.message}` : String(error);
      }
      return 'accepted';
    };
    expect(refusal({ timezone: 'UTC', dates: ['2026-12-25', '2026-02-30'], rrules: [] })).toBe(
      'dates[1]: dates[1] must be a date such as 2026-12-25, got "2026-02-30"',
    );
    expect(refusal({ timezone: 'Mars/Olympus', dates: [], rrules: [] })).toMatch(/^timezone: /);
    expect(refusal({ timezone: 'UTC', dates: [], rrules: ['FREQ=HOURLY'] })).toBe(
      'rrules[0]: rrules[0] must repeat YEARLY, MONTHLY, WEEKLY or DAILY',
    );
    expect(refusal({ timezone: 'UTC', dates: [], rrules: ['FREQ=DAILY;BYHOUR=9'] })).toMatch(/^rrules\[0\]: .*BYHOUR/);
    expect(refusal({ timezone: 'UTC', dates: [], rrules: ['FREQ=YEARLY;COUNT=3'] })).toMatch(/^rrules\[0\]: .*COUNT/);
    expect(refusal({ timezone: 'UTC', dates: [], rrules: ['nonsense'] })).toMatch(/^rrules\[0\]: /);
    expect(refusal({ timezone: 'UTC', dates: ['2026-12-25'], rrules: ['FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25'] })).toBe(
      'accepted',
    );
  });

  it("lists a year's excluded dates: its dates and its rules' days, in order", () => {
    const days = {
      timezone: 'America/New_York',
      dates: ['2027-01-01', '2026-12-25', '2027-12-24'],
      rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4', 'FREQ=YEARLY;BYMONTH=11;BYDAY=4TH'],
    };
    expect(excludedDatesOfYear(days, 2027)).toEqual(['2027-01-01', '2027-07-04', '2027-11-25', '2027-12-24']);
    expect(excludedDatesOfYear(days, 2026)).toEqual(['2026-07-04', '2026-11-26', '2026-12-25']);
    expect(excludedDatesOfYear({ timezone: 'UTC', dates: [], rrules: ['FREQ=WEEKLY;BYDAY=SA,SU'] }, 2027)).toHaveLength(
      104,
    );
  });
});
