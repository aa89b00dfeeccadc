import { describe, expect, it } from 'vitest';
import { markTransitions, transitionWords } from './fire-times.js';
import { formatInZone, formatOffset, formatSpan, offsetMinutes, relative } from './time.js';

describe('fire times across daylight saving', () => {
  it('marks the first fire time after the clocks move, forward and back', () => {
    // 09:00 Berlin every day across the March 2026 change (29 March, +01:00 → +02:00).
    const times = ['2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z', '2026-03-30T07:00:00.000Z'];
    const rows = markTransitions(times, 'Europe/Berlin', new Date('2026-03-27T12:00:00Z'));
    expect(rows.map((r) => r.offset)).toEqual([60, 120, 120]);
    expect(rows.map((r) => r.transition?.words ?? null)).toEqual([
      null,
      'clocks go forward 1 h (+01:00 → +02:00)',
      null,
    ]);
    const autumn = markTransitions(['2026-10-25T08:00:00.000Z'], 'Europe/Berlin', new Date('2026-10-24T12:00:00Z'));
    expect(autumn[0]!.transition).toMatchObject({ from: 120, to: 60, words: 'clocks go back 1 h (+02:00 → +01:00)' });
  });

  it('compares the first fire time with now, and marks nothing in a zone without daylight saving', () => {
    expect(
      markTransitions(['2026-03-29T07:00:00.000Z'], 'Europe/Berlin', new Date('2026-03-28T12:00:00Z'))[0]!.transition,
    ).not.toBeNull();
    expect(
      markTransitions(
        ['2026-03-29T07:00:00.000Z', '2026-11-01T07:00:00.000Z'],
        'UTC',
        new Date('2026-01-01T00:00:00Z'),
      ).every((r) => r.transition === null),
    ).toBe(true);
  });

  it('says half-hour shifts in minutes (Lord Howe Island)', () => {
    expect(transitionWords(660, 630)).toBe('clocks go back 30 min (+11:00 → +10:30)');
    expect(offsetMinutes('2026-01-15T00:00:00Z', 'Australia/Lord_Howe')).toBe(660);
  });
});

describe('time for people', () => {
  it('shows the wall time to the second with its zone', () => {
    expect(formatInZone('2026-03-29T07:00:05.000Z', 'UTC')).toBe('2026-03-29 07:00:05 UTC');
    expect(formatInZone('2026-07-01T13:00:00.000Z', 'America/New_York')).toBe('2026-07-01 09:00:00 GMT-4');
    expect(formatInZone('2026-03-29T00:30:00.000Z', 'Europe/Berlin')).toMatch(/^2026-03-29 01:30:00 /);
  });

  it('writes offsets and spans', () => {
    expect([formatOffset(0), formatOffset(-210), formatOffset(345)]).toEqual(['±00:00', '-03:30', '+05:45']);
    expect([
      formatSpan(850),
      formatSpan(1_234),
      formatSpan(42_000),
      formatSpan(200_000),
      formatSpan(7_500_000),
      formatSpan(-90_000),
    ]).toEqual(['850 ms', '1.2 s', '42 s', '3 min 20 s', '2 h 5 min', '-1 min 30 s']);
    expect(relative('2026-01-01T00:05:00Z', Date.parse('2026-01-01T00:00:00Z'))).toBe('in 5 min');
    expect(relative('2026-01-01T00:00:00Z', Date.parse('2026-01-01T01:00:00Z'))).toBe('1 h ago');
  });
});
