import { CronExpressionParser } from 'cron-parser';
import { compileSchedule, offsetAt, slotsBetween } from '../../libs/time/src/index.js';

/**
 * The zones where raw cron-parser (with `tz`) disagrees with DESIGN §6 for daily jobs at the given
 * times over 2026–2027: it throws, doubles or skips a day. Slow (cron-parser's tz path), so it
 * lives here rather than in the test suite.
 */
export function cronParserDisagreements(times = ['0 0 * * *', '0 1 * * *', '30 2 * * *']): string[] {
  const disagree = new Set<string>();
  const from = new Date('2026-01-01T00:00:00Z');
  const to = new Date('2028-01-01T00:00:00Z');
  // Only zones whose offset changes in the window can disagree.
  const zones = Intl.supportedValuesOf('timeZone').filter(
    (zone) => offsetAt(from.getTime(), zone) !== offsetAt(from.getTime() + 182 * 86_400_000, zone),
  );
  for (const zone of zones) {
    for (const expression of times) {
      const ours = slotsBetween(
        compileSchedule({ kind: 'cron', cron: expression, timezone: zone }),
        from,
        to,
        1000,
      ).map((d) => d.getTime());
      const theirs: number[] = [];
      try {
        const it = CronExpressionParser.parse(expression, { tz: zone, currentDate: from, endDate: to });
        while (theirs.length < ours.length + 2) theirs.push(it.next().getTime());
      } catch {
        // out of range, or cron-parser's "loop limit exceeded"
      }
      if (theirs.length !== ours.length || ours.some((t, i) => theirs[i] !== t)) disagree.add(zone);
    }
  }
  return [...disagree].sort();
}
