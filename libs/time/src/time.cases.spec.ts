import { describe, expect, it } from 'vitest';
import { AmbiguousLocalTimeError, InvalidScheduleError } from './errors.js';
import { parseAt, resolveLocalTime } from './local-time.js';
import { compileSchedule, type ScheduleSpec, slotsBetween } from './schedule.js';
import { formatLocal } from './zone.js';

const slots = (spec: ScheduleSpec, from: string, count: number) =>
  slotsBetween(compileSchedule(spec), new Date(from), new Date('2100-01-01'), count).map((d) => d.toISOString());
const cron = (expression: string, timezone: string, from: string, count = 3) => slots({ kind: 'cron', cron: expression, timezone }, from, count);

describe('hand-checked DST cases', () => {
  it('America/New_York: 02:30 shifts to 03:30 on spring-forward day; 01:30 fires once on fall-back day', () => {
    expect(cron('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z')).toEqual(['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z']);
    expect(cron('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z')).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z', '2026-11-03T06:30:00.000Z']);
    // A wildcard-hour job runs both passes of the repeated hour, and nothing in the gap.
    expect(cron('0 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', 4)).toEqual(['2026-11-01T05:00:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T07:00:00.000Z', '2026-11-01T08:00:00.000Z']);
    expect(cron('0 * * * *', 'America/New_York', '2026-03-08T05:30:00Z', 3)).toEqual(['2026-03-08T06:00:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T08:00:00.000Z']);
  });

  it('Europe/London: 01:30 on 29 March 2026 becomes 02:30 BST; the per-task override can skip it or take the gap end', () => {
    expect(cron('30 1 * * *', 'Europe/London', '2026-03-28T12:00:00Z', 2)).toEqual(['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(slots({ kind: 'cron', cron: '30 1 * * *', timezone: 'Europe/London', dst: { gap: 'skip' } }, '2026-03-28T12:00:00Z', 1)).toEqual(['2026-03-30T00:30:00.000Z']);
    expect(slots({ kind: 'cron', cron: '30 1 * * *', timezone: 'Europe/London', dst: { gap: 'end' } }, '2026-03-28T12:00:00Z', 1)).toEqual(['2026-03-29T01:00:00.000Z']);
    expect(slots({ kind: 'cron', cron: '30 1 * * *', timezone: 'Europe/London', dst: { overlap: 'both' } }, '2026-10-24T12:00:00Z', 2)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-25T01:30:00.000Z']);
    expect(slots({ kind: 'cron', cron: '30 1 * * *', timezone: 'Europe/London', dst: { overlap: 'last' } }, '2026-10-24T12:00:00Z', 1)).toEqual(['2026-10-25T01:30:00.000Z']);
  });

  it('Australia/Lord_Howe (30-minute shift): 02:00 on 4 October 2026 becomes 02:30', () => {
    expect(cron('0 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', 2).map((s) => formatLocal(new Date(s), 'Australia/Lord_Howe'))).toEqual([
      '2026-10-04T02:30:00.000+11:00', '2026-10-05T02:00:00.000+11:00',
    ]);
  });

  it('Antarctica/Troll (2-hour shift): 01:30 on 29 March 2026 becomes 03:30, once', () => {
    expect(cron('30 1 * * *', 'Antarctica/Troll', '2026-03-28T12:00:00Z', 2).map((s) => formatLocal(new Date(s), 'Antarctica/Troll'))).toEqual([
      '2026-03-29T03:30:00.000+02:00', '2026-03-30T01:30:00.000+02:00',
    ]);
  });

  it('America/Santiago and America/Havana (transitions at midnight): a midnight job moves to 01:00 and skips no day', () => {
    expect(cron('0 0 * * *', 'America/Santiago', '2026-09-05T12:00:00Z', 2).map((s) => formatLocal(new Date(s), 'America/Santiago'))).toEqual([
      '2026-09-06T01:00:00.000-03:00', '2026-09-07T00:00:00.000-03:00',
    ]);
    expect(cron('0 0 * * *', 'America/Havana', '2026-03-07T12:00:00Z', 2).map((s) => formatLocal(new Date(s), 'America/Havana'))).toEqual([
      '2026-03-08T01:00:00.000-04:00', '2026-03-09T00:00:00.000-04:00',
    ]);
  });

  it('Asia/Kolkata (no DST): every day at the same instant', () => {
    expect(cron('30 9 * * *', 'Asia/Kolkata', '2026-03-07T12:00:00Z')).toEqual(['2026-03-08T04:00:00.000Z', '2026-03-09T04:00:00.000Z', '2026-03-10T04:00:00.000Z']);
  });

  it('rrule follows the same rule (DTSTART;TZID, COUNT, UNTIL)', () => {
    const spec = (rrule: string): ScheduleSpec => ({ kind: 'rrule', rrule, timezone: 'America/New_York' });
    expect(slots(spec('DTSTART;TZID=America/New_York:20260306T023000\nRRULE:FREQ=DAILY;COUNT=4'), '2026-01-01T00:00:00Z', 10)).toEqual([
      '2026-03-06T07:30:00.000Z', '2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z',
    ]);
    expect(slots(spec('DTSTART;TZID=America/New_York:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260120T000000'), '2026-01-01T00:00:00Z', 10)).toEqual([
      '2026-01-05T14:00:00.000Z', '2026-01-12T14:00:00.000Z', '2026-01-19T14:00:00.000Z',
    ]);
    expect(() => compileSchedule(spec('RRULE:FREQ=SOMETIMES'))).toThrow(InvalidScheduleError);
  });

  it('at: a local time that does not exist or exists twice is refused unless disambiguated', () => {
    expect(() => resolveLocalTime('2026-03-08T02:30:00', 'America/New_York')).toThrow(AmbiguousLocalTimeError);
    expect(() => resolveLocalTime('2026-11-01T01:30:00', 'America/New_York')).toThrow(AmbiguousLocalTimeError);
    expect(resolveLocalTime('2026-03-08T02:30:00', 'America/New_York', 'compatible').toISOString()).toBe('2026-03-08T07:30:00.000Z');
    expect(resolveLocalTime('2026-03-08T02:30:00', 'America/New_York', 'later').toISOString()).toBe('2026-03-08T07:30:00.000Z');
    expect(resolveLocalTime('2026-03-08T02:30:00', 'America/New_York', 'earlier').toISOString()).toBe('2026-03-08T06:30:00.000Z');
    expect(resolveLocalTime('2026-11-01T01:30:00', 'America/New_York', 'earlier').toISOString()).toBe('2026-11-01T05:30:00.000Z');
    expect(resolveLocalTime('2026-11-01T01:30:00', 'America/New_York', 'later').toISOString()).toBe('2026-11-01T06:30:00.000Z');
    // Troll skips 01:00–03:00: 02:30 → 04:30 (+02:00) forward, 00:30 (+00:00) back.
    expect(resolveLocalTime('2026-03-29T02:30:00', 'Antarctica/Troll', 'compatible').toISOString()).toBe('2026-03-29T02:30:00.000Z');
    expect(resolveLocalTime('2026-03-29T02:30:00', 'Antarctica/Troll', 'earlier').toISOString()).toBe('2026-03-29T00:30:00.000Z');
    expect(resolveLocalTime('2026-06-01T09:00:00', 'Asia/Kolkata').toISOString()).toBe('2026-06-01T03:30:00.000Z');
    expect(parseAt('2026-06-01T07:00:00Z', 'Europe/Berlin').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    expect(parseAt('2026-06-01T09:00:00+02:00', 'UTC').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    expect(() => parseAt('2026-02-30T09:00:00', 'UTC')).toThrow(InvalidScheduleError);
  });
});

describe('cron edge cases', () => {
  it('L, W, # and leap years', () => {
    expect(cron('0 0 L * *', 'UTC', '2026-02-01T00:00:00Z', 2)).toEqual(['2026-02-28T00:00:00.000Z', '2026-03-31T00:00:00.000Z']);
    // 15 August 2026 is a Saturday: the nearest weekday is Friday the 14th; 1 November is a Sunday → Monday the 2nd.
    expect(cron('0 0 15W * *', 'UTC', '2026-08-01T00:00:00Z', 1)).toEqual(['2026-08-14T00:00:00.000Z']);
    expect(cron('0 0 1W * *', 'UTC', '2026-10-15T00:00:00Z', 1)).toEqual(['2026-11-02T00:00:00.000Z']);
    expect(cron('0 0 LW * *', 'UTC', '2026-05-01T00:00:00Z', 2)).toEqual(['2026-05-29T00:00:00.000Z', '2026-06-30T00:00:00.000Z']);
    expect(cron('0 9 * * 1#2', 'UTC', '2026-06-01T00:00:00Z', 1)).toEqual(['2026-06-08T09:00:00.000Z']);
    expect(cron('0 0 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
  });

  it('6 fields (seconds first), macros, H hashed by key', () => {
    expect(cron('*/20 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual(['2026-01-01T00:00:20.000Z', '2026-01-01T00:00:40.000Z', '2026-01-01T00:01:00.000Z']);
    expect(cron('@daily', 'UTC', '2026-01-01T12:00:00Z', 1)).toEqual(['2026-01-02T00:00:00.000Z']);
    const hashed = (key: string) => slots({ kind: 'cron', cron: 'H H * * *', timezone: 'UTC', hashKey: key }, '2026-01-01T00:00:00Z', 1)[0];
    expect(hashed('report-a')).toBe(hashed('report-a'));
    expect(new Set(['a', 'b', 'c', 'd', 'e'].map(hashed)).size).toBeGreaterThan(1);
  });

  it.each(['0 0 30 2 *', '61 * * * *', '* * *', '', 'CRON_TZ=UTC 0 9 * * *', 'TZ=Europe/Berlin 0 9 * * *', '* * * * * * *'])('refuses %j (no hang)', (expression) => {
    expect(() => compileSchedule({ kind: 'cron', cron: expression, timezone: 'UTC' })).toThrow(InvalidScheduleError);
  });

  it('refuses an unknown zone', () => {
    expect(() => compileSchedule({ kind: 'cron', cron: '0 9 * * *', timezone: 'Mars/Olympus' })).toThrow(/IANA/);
  });
});
