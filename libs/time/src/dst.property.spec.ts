import { describe, expect, it } from 'vitest';
import type { DstPolicy } from './dst-policy.js';
import { compileSchedule, slotsBetween } from './schedule.js';
import { DAY, GRID, type Rule, ZoneOracle } from './zone-oracle.spec-helper.js';

const FROM = Date.parse('2026-01-01T00:00:00Z');
const TO = Date.parse('2028-01-01T00:00:00Z');
const HOUR = 3_600_000;
const ZONES = Intl.supportedValuesOf('timeZone');
const FIXED: Rule = { gap: 'shift', overlap: 'first' };
const ELAPSED: Rule = { gap: 'skip', overlap: 'both' };

const oracles = new Map<string, ZoneOracle>();
function oracle(zone: string): ZoneOracle {
  let o = oracles.get(zone);
  if (!o) oracles.set(zone, (o = new ZoneOracle(zone, FROM, TO)));
  return o;
}
const transitioning = () => ZONES.filter((zone) => oracle(zone).changes.length > 0);

function slots(cron: string, zone: string, from = FROM, to = TO, dst?: DstPolicy): number[] {
  const schedule = compileSchedule({ kind: 'cron', cron, timezone: zone, dst });
  return slotsBetween(schedule, new Date(from), new Date(to), 1_000_000).map((d) => d.getTime());
}

/** Null when equal; otherwise the first difference, readable. */
function mismatch(actual: number[], expected: number[]): string | null {
  const iso = (t: number | undefined) => (t === undefined ? 'nothing' : new Date(t).toISOString());
  for (let i = 0; i < Math.max(actual.length, expected.length); i += 1) {
    if (actual[i] !== expected[i]) return `slot ${i}: got ${iso(actual[i])}, expected ${iso(expected[i])}`;
  }
  return null;
}

const dailyWalls = (o: ZoneOracle, h: number, m: number) => o.localDates().map((d) => d + h * HOUR + m * 60_000);

describe('DST rule: property tests over every IANA zone, 2026–2027', () => {
  it('knows the zones and finds their transitions', () => {
    expect(ZONES.length).toBeGreaterThan(300);
    expect(transitioning()).toEqual(
      expect.arrayContaining([
        'America/New_York',
        'Europe/London',
        'Australia/Lord_Howe',
        'Antarctica/Troll',
        'America/Santiago',
        'America/Havana',
      ]),
    );
    expect(transitioning()).not.toContain('Asia/Kolkata');
  });

  it.each(['00:00', '00:30', '01:00', '01:30', '02:00', '02:30', '03:00', '12:00', '23:00', '23:30'])(
    'a daily %s job fires once per local date, at the instant the rule gives, in strictly increasing order',
    (time) => {
      const [h, m] = time.split(':').map(Number) as [number, number];
      const problems: string[] = [];
      for (const zone of ZONES) {
        const o = oracle(zone);
        const actual = slots(`${m} ${h} * * *`, zone);
        // One expected instant per local date: the wall time itself, shifted forward through a gap, first pass of an overlap.
        expect(mismatch(actual, o.expected(dailyWalls(o, h, m), FIXED)), zone).toBeNull();
        expect(actual.length, zone).toBeGreaterThanOrEqual(729);
        for (let i = 1; i < actual.length; i += 1) {
          const [a, b] = [o.wallOf(actual[i - 1]!), o.wallOf(actual[i]!)];
          if (!(actual[i]! > actual[i - 1]!))
            problems.push(`${zone}: not increasing at ${new Date(actual[i]!).toISOString()}`);
          // Two slots on one local date only when the first was shifted out of its own date by a gap
          // ending after midnight (Nuuk's 23:00 → 00:00): it still belongs to the date before.
          if (Math.floor(a / DAY) === Math.floor(b / DAY) && a % DAY >= h * HOUR + m * 60_000) {
            problems.push(`${zone}: two slots on ${new Date(a).toISOString().slice(0, 10)}`);
          }
        }
      }
      expect(problems).toEqual([]);
    },
  );

  it('a wildcard-hour expression fires at every real instant whose local wall time matches', () => {
    const matches: Record<string, (wall: number) => boolean> = {
      '*/15 * * * *': (wall) => wall % GRID === 0,
      '0 * * * *': (wall) => wall % HOUR === 0,
      '30 * * * *': (wall) => wall % HOUR === 30 * 60_000,
    };
    for (const zone of transitioning()) {
      const o = oracle(zone);
      for (const change of o.changes) {
        const [from, to] = [change - 2 * DAY, change + DAY];
        for (const [cron, match] of Object.entries(matches)) {
          const expected: number[] = [];
          for (let t = from + GRID; t <= to; t += GRID) if (match(o.wallOf(t))) expected.push(t);
          expect(
            mismatch(slots(cron, zone, from, to), expected),
            `${zone} ${cron} near ${new Date(change).toISOString()}`,
          ).toBeNull();
        }
      }
    }
  });

  it('an hourly job fires every real hour for two years in zones with 30- and 2-hour shifts and midnight transitions', () => {
    for (const zone of [
      'Australia/Lord_Howe',
      'Antarctica/Troll',
      'America/Santiago',
      'America/Havana',
      'Europe/London',
      'Asia/Kolkata',
    ]) {
      const o = oracle(zone);
      const actual = slots('0 * * * *', zone);
      const expected: number[] = [];
      for (let t = FROM + GRID; t <= TO; t += GRID) if (o.wallOf(t) % HOUR === 0) expected.push(t);
      expect(mismatch(actual, expected), zone).toBeNull();
    }
  });

  it.each<[string, DstPolicy]>([
    ['skip', { gap: 'skip' }],
    ['end', { gap: 'end' }],
    ['last', { overlap: 'last' }],
    ['both', { overlap: 'both' }],
  ])('the %s override of a fixed-time job matches the rule in every zone with transitions', (_name, dst) => {
    const rule: Rule = { ...FIXED, ...dst };
    for (const zone of transitioning()) {
      const o = oracle(zone);
      for (const [h, m] of [
        [0, 0],
        [1, 30],
        [2, 30],
        [23, 30],
      ] as const) {
        expect(
          mismatch(slots(`${m} ${h} * * *`, zone, FROM, TO, dst), o.expected(dailyWalls(o, h, m), rule)),
          `${zone} ${h}:${m}`,
        ).toBeNull();
      }
    }
  });

  it('an override on a wildcard-hour job applies too (overlap: first fires once in a repeated hour)', () => {
    for (const zone of ['America/New_York', 'Australia/Lord_Howe', 'Antarctica/Troll']) {
      const o = oracle(zone);
      const walls = o.localDates().flatMap((d) => Array.from({ length: 24 }, (_, h) => d + h * HOUR));
      expect(
        mismatch(
          slots('0 * * * *', zone, FROM, TO, { overlap: 'first' }),
          o.expected(walls, { ...ELAPSED, overlap: 'first' }),
        ),
        zone,
      ).toBeNull();
    }
  });

  it('a daily rrule fires exactly where the equivalent cron does, in every zone with transitions', () => {
    const problems: string[] = [];
    for (const zone of transitioning()) {
      for (const [h, m] of [
        [0, 0],
        [2, 30],
        [23, 30],
      ] as const) {
        const rrule = `DTSTART:20251231T${String(h).padStart(2, '0')}${String(m).padStart(2, '0')}00\nRRULE:FREQ=DAILY`;
        const schedule = compileSchedule({ kind: 'rrule', rrule, timezone: zone });
        const fromRrule = slotsBetween(schedule, new Date(FROM), new Date(TO), 1_000_000).map((d) => d.getTime());
        const problem = mismatch(fromRrule, slots(`${m} ${h} * * *`, zone));
        if (problem) problems.push(`${zone} ${h}:${m} ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('the next slot after any instant in [slot n, slot n+1) is slot n+1', () => {
    const problems: string[] = [];
    for (const zone of transitioning()) {
      const o = oracle(zone);
      for (const cron of ['30 2 * * *', '0 0 * * *', '0 * * * *', '*/15 * * * *']) {
        const schedule = compileSchedule({ kind: 'cron', cron, timezone: zone });
        for (const change of o.changes) {
          const near = slotsBetween(schedule, new Date(change - 3 * DAY), new Date(change + 2 * DAY), 1_000).map((d) =>
            d.getTime(),
          );
          for (let i = 0; i + 1 < near.length; i += 1) {
            const [a, b] = [near[i]!, near[i + 1]!];
            for (const probe of [a, a + 1, Math.floor((a + b) / 2), b - 1]) {
              if (schedule.next(new Date(probe))?.getTime() !== b)
                problems.push(`${zone} ${cron} after ${new Date(probe).toISOString()}`);
            }
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
