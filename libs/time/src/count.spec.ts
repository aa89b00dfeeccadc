import { describe, expect, it } from 'vitest';
import type { DstPolicy } from './dst-policy.js';
import { compileSchedule, countSlots, latestSlots, slotsBetween } from './schedule.js';
import type { Schedule, ScheduleSpec } from './schedule-spec.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The reference: every slot visited with `next`. */
function walked(schedule: Schedule, after: number, until: number): number[] {
  return slotsBetween(schedule, new Date(after), new Date(until), 10_000_000).map((d) => d.getTime());
}

/** A deterministic stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

const TRANSITIONS: [string, string][] = [
  ['Europe/Berlin', '2026-03-29T01:00:00Z'],
  ['Europe/Berlin', '2026-10-25T01:00:00Z'],
  ['America/New_York', '2026-03-08T07:00:00Z'],
  ['America/New_York', '2026-11-01T06:00:00Z'],
  // A 30-minute shift.
  ['Australia/Lord_Howe', '2026-04-04T15:00:00Z'],
  ['Australia/Lord_Howe', '2026-10-03T15:30:00Z'],
  // Transitions at local midnight.
  ['America/Santiago', '2026-04-05T03:00:00Z'],
  ['America/Havana', '2026-03-08T05:00:00Z'],
];
const CRONS = [
  '*/7 * * * * *',
  '*/15 * * * *',
  '30 2 * * *',
  '0 * * * *',
  '0 0 * * *',
  '0 30 1,2,3 * * 0-6',
  '59 23 L * *',
];
const POLICIES: (DstPolicy | undefined)[] = [
  undefined,
  { gap: 'skip', overlap: 'both' },
  { gap: 'end', overlap: 'last' },
  { gap: 'shift', overlap: 'first' },
];

describe('countSlots: exact, without visiting every slot', () => {
  it('counts cron slots as walking them does, across every kind of DST transition and rule', () => {
    const next = random(7);
    for (const [zone, at] of TRANSITIONS) {
      const t = Date.parse(at);
      for (const cron of CRONS) {
        for (const dst of POLICIES) {
          const schedule = compileSchedule({ kind: 'cron', cron, timezone: zone, dst });
          for (let i = 0; i < 4; i += 1) {
            const after = t - Math.floor(next() * 3 * DAY);
            const until = t + Math.floor(next() * 3 * DAY);
            expect(
              countSlots(schedule, new Date(after), new Date(until)),
              `${zone} ${cron} ${JSON.stringify(dst)} (${new Date(after).toISOString()}, ${new Date(until).toISOString()}]`,
            ).toBe(walked(schedule, after, until).length);
          }
        }
      }
    }
  });

  it('counts a year of an every-minute cron in a zone with transitions, and a week of an every-second one', () => {
    const yearly = compileSchedule({ kind: 'cron', cron: '* * * * *', timezone: 'Europe/Berlin' });
    const [from, to] = [Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z')];
    expect(countSlots(yearly, new Date(from), new Date(to))).toBe(walked(yearly, from, to).length);
    const everySecond = compileSchedule({ kind: 'cron', cron: '* * * * * *', timezone: 'America/New_York' });
    const week = [Date.parse('2026-10-29T12:00:00Z'), Date.parse('2026-11-05T12:00:00Z')];
    // A week spanning the fall-back transition: every real second fires once (a wildcard hour follows elapsed time).
    expect(countSlots(everySecond, new Date(week[0]!), new Date(week[1]!))).toBe(7 * 86_400);
  });

  it.each<[string, ScheduleSpec]>([
    ['every', { kind: 'every', everyMs: 15_000, anchor: new Date('2026-01-01T00:00:07Z') }],
    [
      'every, bounded',
      {
        kind: 'every',
        everyMs: 60_000,
        anchor: new Date('2026-01-01T00:00:00Z'),
        startAt: new Date('2026-01-02T00:00:00Z'),
        endAt: new Date('2026-01-03T10:00:00Z'),
      },
    ],
    ['at', { kind: 'at', runAt: new Date('2026-01-02T03:04:05Z') }],
    [
      'cron, bounded',
      {
        kind: 'cron',
        cron: '*/5 * * * *',
        timezone: 'Asia/Kolkata',
        startAt: new Date('2026-01-01T12:00:00Z'),
        endAt: new Date('2026-01-02T12:00:00Z'),
      },
    ],
    [
      'rrule (walked)',
      {
        kind: 'rrule',
        rrule: 'RRULE:FREQ=MINUTELY;INTERVAL=7',
        timezone: 'Europe/Berlin',
        anchor: new Date('2026-01-01T00:00:00Z'),
      },
    ],
  ])('%s: as walking them', (_, spec) => {
    const schedule = compileSchedule(spec);
    const next = random(11);
    const base = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < 20; i += 1) {
      const after = base + Math.floor(next() * 3 * DAY);
      const until = after + Math.floor(next() * 2 * DAY);
      expect(countSlots(schedule, new Date(after), new Date(until))).toBe(walked(schedule, after, until).length);
    }
  });
});

describe('latestSlots: the last k slots before an instant, found backwards', () => {
  it.each([1, 3, 100])('k = %i: the tail of walking them, in order', (k) => {
    for (const [zone, at] of TRANSITIONS.slice(0, 5)) {
      for (const cron of CRONS) {
        const schedule = compileSchedule({ kind: 'cron', cron, timezone: zone });
        const until = Date.parse(at) + HOUR;
        const after = until - 20 * DAY;
        expect(latestSlots(schedule, new Date(after), new Date(until), k).map((d) => d.getTime())).toEqual(
          walked(schedule, after, until).slice(-k),
        );
      }
    }
  });

  it('a week of an every-second schedule: the last 100 slots without walking the week', () => {
    const schedule = compileSchedule({ kind: 'cron', cron: '* * * * * *', timezone: 'UTC' });
    const until = Date.parse('2026-06-08T00:00:00Z');
    let visited = 0;
    const counting: Schedule = { next: (after) => ((visited += 1), schedule.next(after)) };
    const last = latestSlots(counting, new Date(until - 7 * DAY), new Date(until), 100);
    expect(last.map((d) => d.getTime())).toEqual(Array.from({ length: 100 }, (_, i) => until - (99 - i) * 1000));
    expect(visited).toBeLessThan(1_000);
  });

  it('fewer slots than asked in the span: all of them', () => {
    const schedule = compileSchedule({ kind: 'at', runAt: new Date('2026-01-02T00:00:00Z') });
    expect(latestSlots(schedule, new Date('2026-01-01T00:00:00Z'), new Date('2026-01-03T00:00:00Z'), 5)).toEqual([
      new Date('2026-01-02T00:00:00Z'),
    ]);
  });
});
