import { describe, expect, it } from 'vitest';
import type { DstPolicy } from './dst-policy.js';
import { compileSchedule, slotsBetween } from './schedule.js';

/**
 * Hand-checked fire times, from the tzdata rules of each zone (2026):
 * - America/New_York: 2026-03-08 02:00 EST → 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT → 01:00 EST (06:00Z).
 * - Europe/London: 2026-03-29 01:00 GMT → 02:00 BST (01:00Z); 2026-10-25 02:00 BST → 01:00 GMT (01:00Z).
 * - Australia/Lord_Howe (+10:30 / +11, a 30-minute shift): 2026-04-05 02:00 → 01:30 (15:00Z on the 4th);
 *   2026-10-04 02:00 → 02:30 (15:30Z on the 3rd).
 * - Antarctica/Troll (+00 / +02, a 2-hour shift): 2026-03-29 01:00 → 03:00 (01:00Z); 2026-10-25 03:00 → 01:00 (01:00Z).
 * - America/Santiago (-04 / -03, at midnight): 2026-04-05 00:00 → 04-04 23:00 (03:00Z); 2026-09-06 00:00 → 01:00 (04:00Z).
 * - America/Havana (-05 / -04, at midnight): 2026-03-08 00:00 → 01:00 (05:00Z); 2026-11-01 01:00 → 00:00 (05:00Z).
 * - Asia/Kolkata: +05:30 all year.
 */
function cron(expr: string, timezone: string, from: string, count: number, dst?: DstPolicy): string[] {
  const schedule = compileSchedule({ kind: 'cron', cron: expr, timezone, dst });
  return slotsBetween(schedule, new Date(from), new Date('2030-01-01T00:00:00Z'), count).map((d) => d.toISOString());
}

describe('cron across DST transitions, hand-checked', () => {
  it('America/New_York: 02:30 shifts to 03:30 EDT on 8 March; skip, end; 01:30 fires on the first pass on 1 November', () => {
    expect(cron('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    expect(cron('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 2, { gap: 'skip' })).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    expect(cron('30 2 * * *', 'America/New_York', '2026-03-08T00:00:00Z', 1, { gap: 'end' })).toEqual([
      '2026-03-08T07:00:00.000Z',
    ]);
    expect(cron('30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', 3)).toEqual([
      '2026-10-31T05:30:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
    expect(cron('30 1 * * *', 'America/New_York', '2026-11-01T00:00:00Z', 1, { overlap: 'last' })).toEqual([
      '2026-11-01T06:30:00.000Z',
    ]);
    expect(cron('30 1 * * *', 'America/New_York', '2026-11-01T00:00:00Z', 2, { overlap: 'both' })).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T06:30:00.000Z',
    ]);
  });

  it('America/New_York: a wildcard-hour job fires on both passes of the repeated hour and not at all in the gap', () => {
    expect(cron('*/30 * * * *', 'America/New_York', '2026-11-01T04:45:00Z', 5)).toEqual([
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T06:00:00.000Z',
      '2026-11-01T06:30:00.000Z',
      '2026-11-01T07:00:00.000Z',
    ]);
    expect(cron('*/30 * * * *', 'America/New_York', '2026-03-08T06:15:00Z', 3)).toEqual([
      '2026-03-08T06:30:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T07:30:00.000Z',
    ]);
  });

  it('Europe/London: 01:30 becomes 02:30 BST on 29 March and fires once on 25 October', () => {
    expect(cron('30 1 * * *', 'Europe/London', '2026-03-28T00:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(cron('30 1 * * *', 'Europe/London', '2026-10-24T12:00:00Z', 2)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
    expect(cron('0 * * * *', 'Europe/London', '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
  });

  it('Australia/Lord_Howe: a 30-minute gap shifts 02:15 to 02:45; a 30-minute overlap fires 01:45 once', () => {
    expect(cron('15 2 * * *', 'Australia/Lord_Howe', '2026-10-02T12:00:00Z', 3)).toEqual([
      '2026-10-02T15:45:00.000Z',
      '2026-10-03T15:45:00.000Z',
      '2026-10-04T15:15:00.000Z',
    ]);
    expect(cron('15 2 * * *', 'Australia/Lord_Howe', '2026-10-03T12:00:00Z', 1, { gap: 'end' })).toEqual([
      '2026-10-03T15:30:00.000Z',
    ]);
    expect(cron('45 1 * * *', 'Australia/Lord_Howe', '2026-04-03T12:00:00Z', 3)).toEqual([
      '2026-04-03T14:45:00.000Z',
      '2026-04-04T14:45:00.000Z',
      '2026-04-05T15:15:00.000Z',
    ]);
    expect(cron('45 1 * * *', 'Australia/Lord_Howe', '2026-04-04T12:00:00Z', 2, { overlap: 'both' })).toEqual([
      '2026-04-04T14:45:00.000Z',
      '2026-04-04T15:15:00.000Z',
    ]);
  });

  it('Antarctica/Troll: a 2-hour gap shifts 01:30 to 03:30; in the 2-hour overlap 02:30 fires once, at +02', () => {
    expect(cron('30 1 * * *', 'Antarctica/Troll', '2026-03-28T00:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-29T23:30:00.000Z',
    ]);
    expect(cron('30 1 * * *', 'Antarctica/Troll', '2026-03-29T00:00:00Z', 1, { gap: 'end' })).toEqual([
      '2026-03-29T01:00:00.000Z',
    ]);
    expect(cron('30 2 * * *', 'Antarctica/Troll', '2026-10-24T00:00:00Z', 3)).toEqual([
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T02:30:00.000Z',
    ]);
    expect(cron('30 2 * * *', 'Antarctica/Troll', '2026-10-25T00:00:00Z', 2, { overlap: 'both' })).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T02:30:00.000Z',
    ]);
    // Hourly on the 2-hour gap day: 01:00 and 02:00 do not exist, so nothing between 00:00Z and 01:00Z (03:00 +02).
    expect(cron('0 * * * *', 'Antarctica/Troll', '2026-03-28T23:30:00Z', 3)).toEqual([
      '2026-03-29T00:00:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T02:00:00.000Z',
    ]);
  });

  it('America/Santiago: midnight does not exist on 6 September (→ 01:00); 23:30 on 4 April fires on its first pass', () => {
    expect(cron('0 0 * * *', 'America/Santiago', '2026-09-05T00:00:00Z', 3)).toEqual([
      '2026-09-05T04:00:00.000Z',
      '2026-09-06T04:00:00.000Z',
      '2026-09-07T03:00:00.000Z',
    ]);
    expect(cron('0 0 * * *', 'America/Santiago', '2026-04-04T00:00:00Z', 2)).toEqual([
      '2026-04-04T03:00:00.000Z',
      '2026-04-05T04:00:00.000Z',
    ]);
    expect(cron('30 23 * * *', 'America/Santiago', '2026-04-03T12:00:00Z', 3)).toEqual([
      '2026-04-04T02:30:00.000Z',
      '2026-04-05T02:30:00.000Z',
      '2026-04-06T03:30:00.000Z',
    ]);
  });

  it('America/Havana: midnight does not exist on 8 March (→ 01:00); 00:30 on 1 November fires on its first pass', () => {
    expect(cron('0 0 * * *', 'America/Havana', '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T05:00:00.000Z',
      '2026-03-08T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z',
    ]);
    expect(cron('30 0 * * *', 'America/Havana', '2026-10-31T00:00:00Z', 3)).toEqual([
      '2026-10-31T04:30:00.000Z',
      '2026-11-01T04:30:00.000Z',
      '2026-11-02T05:30:00.000Z',
    ]);
    expect(cron('30 0 * * *', 'America/Havana', '2026-11-01T00:00:00Z', 1, { overlap: 'last' })).toEqual([
      '2026-11-01T05:30:00.000Z',
    ]);
  });

  it('Asia/Kolkata: +05:30, no transitions', () => {
    expect(cron('30 2 * * *', 'Asia/Kolkata', '2026-03-27T00:00:00Z', 3)).toEqual([
      '2026-03-27T21:00:00.000Z',
      '2026-03-28T21:00:00.000Z',
      '2026-03-29T21:00:00.000Z',
    ]);
    expect(cron('0 * * * *', 'Asia/Kolkata', '2026-03-29T00:00:00Z', 2)).toEqual([
      '2026-03-29T00:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
    ]);
  });
});
