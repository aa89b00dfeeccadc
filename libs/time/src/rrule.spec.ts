import { describe, expect, it } from 'vitest';
import type { DstPolicy } from './dst-policy.js';
import { compileSchedule, slotsBetween } from './schedule.js';
import { refusal } from './refusal.spec-helper.js';

function rrule(
  text: string,
  timezone: string,
  from: string,
  count: number,
  extra: { anchor?: Date; dst?: DstPolicy } = {},
): string[] {
  const schedule = compileSchedule({ kind: 'rrule', rrule: text, timezone, ...extra });
  return slotsBetween(schedule, new Date(from), new Date('2100-01-01T00:00:00Z'), count).map((d) => d.toISOString());
}

describe('rrule schedules', () => {
  it('America/New_York: DTSTART;TZID + COUNT, shifted through the March gap, first pass in November', () => {
    const march = 'DTSTART;TZID=America/New_York:20260306T023000\nRRULE:FREQ=DAILY;COUNT=4';
    expect(rrule(march, 'America/New_York', '2026-01-01T00:00:00Z', 10)).toEqual([
      '2026-03-06T07:30:00.000Z',
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    expect(rrule(march, 'America/New_York', '2026-01-01T00:00:00Z', 10, { dst: { gap: 'skip' } })).toHaveLength(3);
    const november = 'DTSTART;TZID=America/New_York:20261031T013000\nRRULE:FREQ=DAILY;COUNT=3';
    expect(rrule(november, 'America/New_York', '2026-01-01T00:00:00Z', 10)).toEqual([
      '2026-10-31T05:30:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
    expect(rrule(november, 'America/New_York', '2026-01-01T00:00:00Z', 10, { dst: { overlap: 'both' } })).toHaveLength(
      4,
    );
  });

  it('Europe/London, Lord Howe, Troll, Santiago, Havana and Kolkata follow the same rule as cron', () => {
    expect(
      rrule(
        'DTSTART;TZID=Europe/London:20260328T013000\nRRULE:FREQ=DAILY;COUNT=3',
        'Europe/London',
        '2026-01-01T00:00:00Z',
        5,
      ),
    ).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(
      rrule(
        'DTSTART;TZID=Australia/Lord_Howe:20261003T021500\nRRULE:FREQ=DAILY;COUNT=3',
        'Australia/Lord_Howe',
        '2026-01-01T00:00:00Z',
        5,
      ),
    ).toEqual(['2026-10-02T15:45:00.000Z', '2026-10-03T15:45:00.000Z', '2026-10-04T15:15:00.000Z']);
    expect(
      rrule(
        'DTSTART;TZID=Antarctica/Troll:20261024T023000\nRRULE:FREQ=DAILY;COUNT=3',
        'Antarctica/Troll',
        '2026-01-01T00:00:00Z',
        5,
      ),
    ).toEqual(['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T02:30:00.000Z']);
    expect(
      rrule(
        'DTSTART;TZID=America/Santiago:20260905T000000\nRRULE:FREQ=DAILY;COUNT=3',
        'America/Santiago',
        '2026-01-01T00:00:00Z',
        5,
      ),
    ).toEqual(['2026-09-05T04:00:00.000Z', '2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z']);
    expect(
      rrule(
        'DTSTART;TZID=America/Havana:20261031T003000\nRRULE:FREQ=DAILY;COUNT=3',
        'America/Havana',
        '2026-01-01T00:00:00Z',
        5,
      ),
    ).toEqual(['2026-10-31T04:30:00.000Z', '2026-11-01T04:30:00.000Z', '2026-11-02T05:30:00.000Z']);
    expect(
      rrule(
        'DTSTART;TZID=Asia/Kolkata:20260328T023000\nRRULE:FREQ=WEEKLY;COUNT=2',
        'Asia/Kolkata',
        '2026-01-01T00:00:00Z',
        5,
      ),
    ).toEqual(['2026-03-27T21:00:00.000Z', '2026-04-03T21:00:00.000Z']);
  });

  it('an hourly rule without BYHOUR follows elapsed time: both passes of the repeated hour', () => {
    const text = 'DTSTART;TZID=Europe/London:20260101T000000\nRRULE:FREQ=HOURLY';
    expect(rrule(text, 'Europe/London', '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
    // With BYHOUR it is fixed-time: 01:00 on 25 October fires once.
    expect(
      rrule(
        'DTSTART;TZID=Europe/London:20260101T000000\nRRULE:FREQ=HOURLY;BYHOUR=1,2',
        'Europe/London',
        '2026-10-24T23:30:00Z',
        2,
      ),
    ).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z']);
  });

  it('UNTIL in UTC is an instant; a bare RRULE or FREQ starts at the anchor’s local time', () => {
    expect(
      rrule(
        'DTSTART;TZID=Europe/Berlin:20260101T090000\nRRULE:FREQ=DAILY;UNTIL=20260103T080000Z',
        'Europe/Berlin',
        '2025-12-31T00:00:00Z',
        10,
      ),
    ).toEqual(['2026-01-01T08:00:00.000Z', '2026-01-02T08:00:00.000Z', '2026-01-03T08:00:00.000Z']);
    expect(
      rrule(
        'DTSTART;TZID=Europe/Berlin:20260101T090000\nRRULE:FREQ=DAILY;UNTIL=20260102T090000;INTERVAL=1',
        'Europe/Berlin',
        '2025-12-31T00:00:00Z',
        10,
      ),
    ).toEqual(['2026-01-01T08:00:00.000Z', '2026-01-02T08:00:00.000Z']);
    const anchor = new Date('2026-06-01T07:15:00Z'); // 09:15 in Berlin
    expect(rrule('RRULE:FREQ=DAILY;COUNT=2', 'Europe/Berlin', '2026-01-01T00:00:00Z', 5, { anchor })).toEqual([
      '2026-06-01T07:15:00.000Z',
      '2026-06-02T07:15:00.000Z',
    ]);
    expect(
      rrule('FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0', 'Europe/Berlin', '2026-01-01T00:00:00Z', 1, {
        anchor,
      }),
    ).toEqual(['2026-06-08T07:00:00.000Z']);
  });

  it('EXDATE removes an occurrence; RFC 5545 line folding is undone', () => {
    const text =
      'DTSTART;TZID=Europe/Berlin:20260105T090000\r\nRRULE:FREQ=DAILY;\r\n COUNT=3\r\nEXDATE;TZID=Europe/Berlin:20260106T090000';
    expect(rrule(text, 'Europe/Berlin', '2026-01-01T00:00:00Z', 5)).toEqual([
      '2026-01-05T08:00:00.000Z',
      '2026-01-07T08:00:00.000Z',
    ]);
  });

  it('stays exact for a minutely rule that started years ago (the rule is re-based, not walked from 2020)', () => {
    const text = 'DTSTART;TZID=Europe/Berlin:20200101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=7';
    // Wall times 2020-01-01T00:00 + 7k minutes; CET (+1) before the 02:00 → 03:00 jump on 29 March 2026, CEST (+2) after.
    const expected: string[] = [];
    const [gapFrom, gapUntil] = [Date.UTC(2026, 2, 29, 2), Date.UTC(2026, 2, 29, 3)];
    for (let wall = Date.UTC(2020, 0, 1); expected.length < 20; wall += 7 * 60_000) {
      if (wall < Date.UTC(2026, 2, 29, 0)) continue;
      if (wall >= gapFrom && wall < gapUntil) continue; // elapsed time: nothing in the gap
      expected.push(new Date(wall - (wall < gapFrom ? 1 : 2) * 3_600_000).toISOString());
    }
    expect(rrule(text, 'Europe/Berlin', '2026-03-28T22:59:59Z', 20)).toEqual(expected);
  });

  it('refuses invalid text, a TZID other than schedule.timezone, and rules with no occurrence', () => {
    const cases: [string, string][] = [
      ['RRULE:FREQ=FORTNIGHTLY', 'FREQ'],
      ['DTSTART:2026-01-01\nRRULE:FREQ=DAILY', 'not a date'],
      ['BEGIN:VEVENT', 'not DTSTART'],
      ['DTSTART;TZID=Europe/Paris:20260101T090000\nRRULE:FREQ=DAILY', 'schedule.timezone'],
      ['DTSTART;TZID=Nowhere/Land:20260101T090000\nRRULE:FREQ=DAILY', 'IANA'],
      ['RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30', 'no occurrence'],
      ['RRULE:FREQ=DAILY;COUNT=2;UNTIL=20260101T000000Z', 'COUNT and UNTIL'],
      ['', 'RFC 5545'],
    ];
    for (const [text, message] of cases) {
      const error = refusal(() =>
        compileSchedule({
          kind: 'rrule',
          rrule: text,
          timezone: 'Europe/Berlin',
          anchor: new Date('2026-01-01T00:00:00Z'),
        }),
      );
      expect(error.field, text).toBe('schedule.rrule');
      expect(error.message, text).toContain(message);
    }
  });
});
