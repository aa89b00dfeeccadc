import { describe, expect, it } from 'vitest';
import { cronWords, intervalWords, rruleWords, scheduleExpression, scheduleWords } from './schedule-words.js';

const base = { timezone: 'Europe/Berlin', startAt: null, endAt: null, remainingRuns: null, jitter: '0s' };

describe('schedules in words', () => {
  it('reads cron, with its zone, and falls back to the expression for what it cannot say', () => {
    expect(scheduleWords({ ...base, cron: '0 9 * * 1-5' })).toBe('At 09:00, Monday through Friday (Europe/Berlin)');
    expect(cronWords('*/5 * * * * *')).toBe('Every 5 seconds');
    expect(cronWords('0 0 L * *')).toBe('At 00:00, on the last day of the month');
    expect(scheduleWords({ ...base, cron: 'H 9 * * *' })).toBe('Cron H 9 * * * (Europe/Berlin)');
  });

  it('reads intervals in their largest whole unit', () => {
    expect([
      intervalWords('15m'),
      intervalWords('90s'),
      intervalWords('1h'),
      intervalWords('250ms'),
      intervalWords('1.5h'),
    ]).toEqual(['Every 15 minutes', 'Every 90 seconds', 'Every hour', 'Every 250 milliseconds', 'Every 90 minutes']);
  });

  it('reads one-offs in their zone and RRULEs with the rrule package', () => {
    expect(scheduleWords({ ...base, at: '2026-06-01T07:00:00.000Z' })).toMatch(/^Once, at 2026-06-01 09:00:00 /);
    expect(rruleWords('DTSTART;TZID=Europe/Berlin:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO')).toBe(
      'every week on Monday',
    );
    expect(scheduleWords({ ...base, rrule: 'FREQ=DAILY;BYHOUR=9' })).toBe('Every day at 9 (Europe/Berlin)');
    expect(rruleWords('not a rule')).toBeNull();
    expect(scheduleExpression({ ...base, every: '15m' })).toBe('every 15m');
    // A one-off's expression is its wall time in its zone, not the UTC instant it is stored as.
    expect(scheduleExpression({ ...base, at: '2035-06-01T02:00:00.000Z' })).toMatch(/^2035-06-01 04:00:00 GMT\+2$/);
  });
});
