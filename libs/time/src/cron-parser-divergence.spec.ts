import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { compileSchedule, slotsBetween } from './schedule.js';
import { DAY, ZoneOracle } from './zone-oracle.spec-helper.js';

const FROM = Date.parse('2026-01-01T00:00:00Z');
const TO = Date.parse('2028-01-01T00:00:00Z');
const JOBS = [
  ['02:30', 2, 30],
  ['00:00', 0, 0],
  ['01:00', 1, 0],
] as const;

/** cron-parser 5's own answer in `zone`, or the message it throws. */
function cronParserSlots(cron: string, zone: string, from: number, to: number): number[] | string {
  try {
    const it = CronExpressionParser.parse(cron, { tz: zone, currentDate: new Date(from) });
    const slots: number[] = [];
    for (let next = it.next().getTime(); next <= to && slots.length < 20; next = it.next().getTime()) slots.push(next);
    return slots;
  } catch (error) {
    return `throws "${(error as Error).message}"`;
  }
}

function describeDifference(theirs: number[] | string, ours: number[]): string {
  if (typeof theirs === 'string') return theirs;
  const local = (list: number[]) =>
    list.filter((t) => !ours.includes(t) || !theirs.includes(t)).map((t) => new Date(t).toISOString().slice(0, 16));
  if (theirs.length > ours.length) return `fires twice (${local(theirs).join(', ')})`;
  if (theirs.length < ours.length)
    return `skips a day (missing ${ours
      .filter((t) => !theirs.includes(t))
      .map((t) => new Date(t).toISOString().slice(0, 16))
      .join(', ')})`;
  return `fires at other instants (${local(theirs).join(', ')} instead of ${local(ours.filter((t) => !theirs.includes(t))).join(', ')})`;
}

/**
 * Where raw cron-parser 5 (`tz` option) disagrees with DESIGN §6 for daily jobs, 2026–2027: the
 * list for the release note. Our side is checked against the brute-force oracle in every window,
 * so a disagreement is cron-parser's.
 */
function cronParserDivergences(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const zone of Intl.supportedValuesOf('timeZone')) {
    const oracle = new ZoneOracle(zone, FROM, TO);
    for (const change of oracle.changes) {
      const [from, to] = [Math.max(FROM, change - 3 * DAY), Math.min(TO, change + 2 * DAY)];
      for (const [label, h, m] of JOBS) {
        const cron = `${m} ${h} * * *`;
        const ours = slotsBetween(
          compileSchedule({ kind: 'cron', cron, timezone: zone }),
          new Date(from),
          new Date(to),
          100,
        ).map((d) => d.getTime());
        const walls = oracle.localDates().map((d) => d + h * 3_600_000 + m * 60_000);
        const expected = oracle.expected(walls, { gap: 'shift', overlap: 'first' }).filter((t) => t > from && t <= to);
        if (JSON.stringify(ours) !== JSON.stringify(expected))
          throw new Error(`${zone} ${cron}: Punctual disagrees with the oracle`);
        const theirs = cronParserSlots(cron, zone, from, to);
        if (JSON.stringify(theirs) !== JSON.stringify(ours)) {
          found.set(zone, [
            ...(found.get(zone) ?? []),
            `${label} near ${new Date(change).toISOString().slice(0, 10)}: ${describeDifference(theirs, ours)}`,
          ]);
        }
      }
    }
  }
  return found;
}

describe('raw cron-parser 5 against the DST rule', () => {
  it('lists the zones where cron-parser throws, doubles or skips a daily 02:30 / 00:00 / 01:00 job', () => {
    const divergences = cronParserDivergences();
    const report = [...divergences.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([zone, notes]) => `${zone}\n    ${notes.join('\n    ')}`);
    console.log(`cron-parser disagrees with DESIGN §6 in ${divergences.size} zones:\n  ${report.join('\n  ')}`);
    // The cases that motivated the rewrite must show up; if cron-parser fixes them, update the release note.
    expect([...divergences.keys()]).toEqual(expect.arrayContaining(['Australia/Lord_Howe', 'Antarctica/Troll']));
    expect(divergences.has('Asia/Kolkata')).toBe(false);
  });
});
