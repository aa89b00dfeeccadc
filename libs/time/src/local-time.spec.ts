import { describe, expect, it } from 'vitest';
import { AmbiguousLocalTimeError, InvalidScheduleError } from './errors.js';
import { type Disambiguation, parseAt, resolveLocalTime } from './local-time.js';

const resolve = (local: string, zone: string, d?: Disambiguation) => resolveLocalTime(local, zone, d).toISOString();

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** [zone, local time, earlier, later] for a time the clocks skip (compatible = later). */
const GAPS: [string, string, string, string][] = [
  ['America/New_York', '2026-03-08T02:30:00', '2026-03-08T06:30:00.000Z', '2026-03-08T07:30:00.000Z'],
  ['Europe/London', '2026-03-29T01:30:00', '2026-03-29T00:30:00.000Z', '2026-03-29T01:30:00.000Z'],
  ['Australia/Lord_Howe', '2026-10-04T02:15:00', '2026-10-03T15:15:00.000Z', '2026-10-03T15:45:00.000Z'],
  ['Antarctica/Troll', '2026-03-29T02:00:00', '2026-03-29T00:00:00.000Z', '2026-03-29T02:00:00.000Z'],
  ['America/Santiago', '2026-09-06T00:30:00', '2026-09-06T03:30:00.000Z', '2026-09-06T04:30:00.000Z'],
  ['America/Havana', '2026-03-08T00:00:00', '2026-03-08T04:00:00.000Z', '2026-03-08T05:00:00.000Z'],
];

/** [zone, local time, first pass, second pass] for a time the clocks show twice (compatible = first). */
const OVERLAPS: [string, string, string, string][] = [
  ['America/New_York', '2026-11-01T01:30:00', '2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z'],
  ['Europe/London', '2026-10-25T01:30:00', '2026-10-25T00:30:00.000Z', '2026-10-25T01:30:00.000Z'],
  ['Australia/Lord_Howe', '2026-04-05T01:45:00', '2026-04-04T14:45:00.000Z', '2026-04-04T15:15:00.000Z'],
  ['Antarctica/Troll', '2026-10-25T01:00:00', '2026-10-24T23:00:00.000Z', '2026-10-25T01:00:00.000Z'],
  ['America/Santiago', '2026-04-04T23:30:00', '2026-04-05T02:30:00.000Z', '2026-04-05T03:30:00.000Z'],
  ['America/Havana', '2026-11-01T00:30:00', '2026-11-01T04:30:00.000Z', '2026-11-01T05:30:00.000Z'],
];

describe('one-off local times (at)', () => {
  it.each(GAPS)(
    '%s: %s does not exist — refused, or resolved by each disambiguation',
    (zone, local, earlier, later) => {
      const error = thrown(() => resolveLocalTime(local, zone));
      expect(error).toBeInstanceOf(AmbiguousLocalTimeError);
      expect((error as AmbiguousLocalTimeError).field).toBe('schedule.at');
      expect((error as Error).message).toMatch(/does not exist/);
      expect(resolve(local, zone, 'earlier')).toBe(earlier);
      expect(resolve(local, zone, 'later')).toBe(later);
      expect(resolve(local, zone, 'compatible')).toBe(later);
    },
  );

  it.each(OVERLAPS)(
    '%s: %s occurs twice — refused, or resolved by each disambiguation',
    (zone, local, first, second) => {
      const error = thrown(() => resolveLocalTime(local, zone));
      expect(error).toBeInstanceOf(AmbiguousLocalTimeError);
      expect((error as Error).message).toMatch(/occurs twice/);
      expect(resolve(local, zone, 'earlier')).toBe(first);
      expect(resolve(local, zone, 'later')).toBe(second);
      expect(resolve(local, zone, 'compatible')).toBe(first);
    },
  );

  it('resolves an ordinary local time without a disambiguation, whatever is given', () => {
    for (const d of [undefined, 'earlier', 'later', 'compatible'] as const) {
      expect(resolve('2026-06-01T09:00:00', 'Europe/Berlin', d)).toBe('2026-06-01T07:00:00.000Z');
      expect(resolve('2026-03-29T02:30', 'Asia/Kolkata', d)).toBe('2026-03-28T21:00:00.000Z');
    }
    expect(resolve('2026-06-01T09:00:00.250', 'UTC')).toBe('2026-06-01T09:00:00.250Z');
  });

  it('parseAt takes an instant with an offset as is, and a local time in the zone', () => {
    expect(parseAt('2026-06-01T07:00:00Z', 'Europe/Berlin').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    expect(parseAt('2026-06-01T09:00:00+02:00', 'America/New_York').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    expect(parseAt('2026-06-01T01:30:00-0530', 'UTC').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    expect(parseAt('2026-06-01T09:00:00', 'Europe/Berlin').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    expect(thrown(() => parseAt('2026-11-01T01:30:00', 'America/New_York'))).toBeInstanceOf(AmbiguousLocalTimeError);
    expect(parseAt('2026-11-01T01:30:00', 'America/New_York', 'later').toISOString()).toBe('2026-11-01T06:30:00.000Z');
  });

  it('refuses what is not a time, impossible dates, unknown zones and unknown disambiguations', () => {
    const cases: [() => unknown, string][] = [
      [() => parseAt('tomorrow', 'UTC'), 'schedule.at'],
      [() => parseAt('2026-02-30T09:00:00', 'UTC'), 'schedule.at'],
      [() => parseAt('2026-06-01T24:00:00', 'UTC'), 'schedule.at'],
      [() => parseAt('2026-06-01T09:00:00+25:00', 'UTC'), 'schedule.at'],
      [() => parseAt('2026-06-01', 'UTC'), 'schedule.at'],
      [() => parseAt('2026-06-01T09:00:00', 'Moon/Base'), 'schedule.timezone'],
      [() => resolveLocalTime('2026-06-01T09:00:00', 'UTC', 'latest' as Disambiguation), 'schedule.disambiguation'],
    ];
    for (const [run, field] of cases) {
      const error = thrown(run);
      expect(error).toBeInstanceOf(InvalidScheduleError);
      expect((error as InvalidScheduleError).field).toBe(field);
    }
  });
});
