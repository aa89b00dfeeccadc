import { describe, expect, it } from 'vitest';
import { instantsOfWall } from './wall-time.js';
import { timelineOf } from './zone-timeline.js';

const HOUR = 3_600_000;
const t = (s: string) => Date.parse(s);

/** The offset by a different road than the timeline: formatToParts of the full local date and time. */
function intlOffset(instant: number, zone: string): number {
  const parts: Record<string, number> = {};
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  for (const p of format.formatToParts(instant)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return (
    Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) -
    Math.floor(instant / 1000) * 1000
  );
}

/** Offset changes in 2026 as the segments report them: [instant, offset before, offset after] in hours. */
function changes2026(zone: string): [string, number, number][] {
  const timeline = timelineOf(zone);
  const found: [string, number, number][] = [];
  for (
    let seg = timeline.segmentAt(t('2026-01-01T00:00:00Z'));
    seg.start < t('2027-01-01T00:00:00Z');
    seg = timeline.segmentAt(seg.end)
  ) {
    if (seg.prev !== seg.offset && seg.start >= t('2026-01-01T00:00:00Z'))
      found.push([new Date(seg.start).toISOString(), seg.prev / HOUR, seg.offset / HOUR]);
  }
  return found;
}

describe('zone timelines', () => {
  it('pin each 2026 transition to its instant', () => {
    expect(changes2026('America/New_York')).toEqual([
      ['2026-03-08T07:00:00.000Z', -5, -4],
      ['2026-11-01T06:00:00.000Z', -4, -5],
    ]);
    expect(changes2026('Australia/Lord_Howe')).toEqual([
      ['2026-04-04T15:00:00.000Z', 11, 10.5],
      ['2026-10-03T15:30:00.000Z', 10.5, 11],
    ]);
    expect(changes2026('Antarctica/Troll')).toEqual([
      ['2026-03-29T01:00:00.000Z', 0, 2],
      ['2026-10-25T01:00:00.000Z', 2, 0],
    ]);
    expect(changes2026('America/Havana')).toEqual([
      ['2026-03-08T05:00:00.000Z', -5, -4],
      ['2026-11-01T05:00:00.000Z', -4, -5],
    ]);
    expect(changes2026('Asia/Kolkata')).toEqual([]);
  });

  it('agree with Intl at random instants, 1970–2040, in zones with odd histories', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const zones = [
      'America/New_York',
      'Europe/Moscow',
      'Australia/Lord_Howe',
      'Antarctica/Troll',
      'America/Santiago',
      'Africa/Casablanca',
      'Asia/Tehran',
      'Pacific/Apia',
      'Europe/Dublin',
      'America/Nuuk',
    ];
    const [from, to] = [t('1970-01-01T00:00:00Z'), t('2040-01-01T00:00:00Z')];
    const mismatches: string[] = [];
    for (const zone of zones) {
      for (let i = 0; i < 300; i += 1) {
        const instant = from + Math.floor(random() * (to - from));
        if (timelineOf(zone).offsetAt(instant) !== intlOffset(instant, zone))
          mismatches.push(`${zone} ${new Date(instant).toISOString()}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('map a wall time to none, one or two instants', () => {
    const wall = (s: string) => t(`${s}Z`);
    expect(instantsOfWall(wall('2026-03-08T02:30:00'), 'America/New_York')).toEqual({
      instants: [],
      gap: { before: -5 * HOUR, after: -4 * HOUR, end: t('2026-03-08T07:00:00Z') },
    });
    expect(instantsOfWall(wall('2026-11-01T01:30:00'), 'America/New_York').instants).toEqual([
      t('2026-11-01T05:30:00Z'),
      t('2026-11-01T06:30:00Z'),
    ]);
    expect(instantsOfWall(wall('2026-07-01T12:00:00'), 'America/New_York')).toEqual({
      instants: [t('2026-07-01T16:00:00Z')],
    });
    // Samoa skipped 30 December 2011 entirely (UTC-10 → UTC+14).
    expect(instantsOfWall(wall('2011-12-30T12:00:00'), 'Pacific/Apia').instants).toEqual([]);
  });
});
