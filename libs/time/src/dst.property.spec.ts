import { describe, expect, it } from 'vitest';
import { compileSchedule, slotsBetween } from './schedule.js';
import { offsetAt, wallOf } from './wall-clock.js';

const FROM = Date.parse('2026-01-01T00:00:00Z');
const TO = Date.parse('2028-01-01T00:00:00Z');
const DAY = 86_400_000;
const ZONES = Intl.supportedValuesOf('timeZone');

const localDate = (instant: number, zone: string) => new Date(wallOf(instant, zone)).toISOString().slice(0, 10);

/** Zones whose offset changes in the window (the interesting ones), found from the offsets themselves. */
const transitioning = ZONES.filter((zone) => {
  const first = offsetAt(FROM, zone);
  for (let t = FROM; t < TO; t += 7 * DAY) if (offsetAt(t, zone) !== first) return true;
  return false;
});

describe('DST rule, property tests over every IANA zone, 2026–2027', () => {
  it('knows the zones', () => {
    expect(ZONES.length).toBeGreaterThan(300);
    expect(transitioning).toEqual(expect.arrayContaining(['America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'Antarctica/Troll', 'America/Santiago']));
  });

  it.each(['00:00', '00:30', '01:30', '02:00', '02:30', '03:00', '23:30'])(
    'a daily %s job fires exactly once per local date, at the instant the rule gives, strictly increasing',
    (time) => {
      const [h, m] = time.split(':').map(Number) as [number, number];
      const wanted = h * 60 + m;
      // Failures are collected rather than asserted one by one: a million expect() calls are slow.
      const failures: string[] = [];
      for (const zone of ZONES) {
        const slots = slotsBetween(compileSchedule({ kind: 'cron', cron: `${m} ${h} * * *`, timezone: zone }), new Date(FROM), new Date(TO), 1000).map((d) => d.getTime());
        const dates = slots.map((slot) => localDate(slot, zone));
        // Never doubled, never skipped: two years of consecutive local dates, each once (the first
        // may still be 31 Dec 2025 or already 2 Jan 2026, depending on the zone's offset).
        if (Math.abs(dates.length - 730) > 1 || Math.abs(Date.parse(dates[0]!) - Date.parse('2026-01-01')) > DAY) failures.push(`${zone}: ${dates.length} slots from ${dates[0]}`);
        for (let i = 1; i < slots.length; i += 1) {
          if (Date.parse(dates[i]!) - Date.parse(dates[i - 1]!) !== DAY) failures.push(`${zone}: ${dates[i - 1]} then ${dates[i]}`);
          if (!(slots[i]! > slots[i - 1]!)) failures.push(`${zone}: not increasing at ${dates[i]}`);
        }
        // At the wall time itself or, where it does not exist, moved by exactly the gap: forward,
        // or back when forward would leave the local date (a gap that ends at midnight).
        for (const slot of slots) {
          const wall = new Date(wallOf(slot, zone));
          const moved = wall.getUTCHours() * 60 + wall.getUTCMinutes() - wanted;
          if (moved === 0) continue;
          const around = [offsetAt(slot - DAY, zone), offsetAt(slot + DAY, zone)];
          const gap = (Math.max(...around) - Math.min(...around)) / 60_000;
          if (gap === 0 || Math.abs(moved) !== gap) failures.push(`${zone}: ${new Date(slot).toISOString()} moved ${moved} min, gap ${gap}`);
        }
      }
      expect(failures).toEqual([]);
    },
  );

  it('a wildcard-hour expression fires at every real instant whose local wall time matches', () => {
    for (const zone of transitioning) {
      const schedule = compileSchedule({ kind: 'cron', cron: '*/15 * * * *', timezone: zone });
      // Around each transition of the window: compare with a brute-force scan of every minute.
      for (let t = FROM; t < TO; t += DAY) {
        if (offsetAt(t, zone) === offsetAt(t + DAY, zone)) continue;
        const expected: number[] = [];
        for (let m = t; m < t + DAY; m += 60_000) if (new Date(wallOf(m, zone)).getUTCMinutes() % 15 === 0) expected.push(m);
        const actual = slotsBetween(schedule, new Date(t - 1), new Date(t + DAY - 1), 10_000).map((d) => d.getTime());
        if (actual.join() !== expected.join()) expect(actual, `${zone} on ${new Date(t).toISOString()}`).toEqual(expected);
      }
    }
  });

  it('the next slot after any instant in [slot n, slot n+1) is slot n+1', () => {
    for (const zone of transitioning.slice(0, 60)) {
      for (const cron of ['30 2 * * *', '0 * * * *']) {
        const schedule = compileSchedule({ kind: 'cron', cron, timezone: zone });
        const slots = slotsBetween(schedule, new Date(FROM), new Date(FROM + 400 * DAY), 400);
        for (let i = 0; i + 1 < slots.length; i += 7) {
          const [a, b] = [slots[i]!.getTime(), slots[i + 1]!.getTime()];
          for (const probe of [a, a + 1, Math.floor((a + b) / 2), b - 1]) {
            const next = schedule.next(new Date(probe))?.getTime();
            if (next !== b) expect(next, `${zone} ${cron} after ${new Date(probe).toISOString()}`).toBe(b);
          }
        }
      }
    }
  });
});
