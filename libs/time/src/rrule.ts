import rrulePkg, { type Options } from 'rrule';
import { type DstPolicy, resolveDstRule } from './dst-policy.js';
import { InvalidScheduleError } from './errors.js';
import { nextFireInstant, type WallSource } from './fire-time.js';
import { parseRecurrence, type Recurrence } from './rrule-text.js';
import type { Schedule } from './schedule-spec.js';
import { assertTimeZone } from './zone.js';
import { timelineOf, wallOf } from './zone-timeline.js';

const { RRule, RRuleSet, Frequency } = rrulePkg;

/** Occurrences computed per refill: enough to amortise the `rrule` package's walk from DTSTART. */
const CHUNK = 256;
const SPAN = 400 * 86_400_000;
/** Length of one period of the fixed-length frequencies, in ms of wall time. */
const PERIOD: Partial<Record<number, number>> = {
  [Frequency.WEEKLY]: 7 * 86_400_000,
  [Frequency.DAILY]: 86_400_000,
  [Frequency.HOURLY]: 3_600_000,
  [Frequency.MINUTELY]: 60_000,
  [Frequency.SECONDLY]: 1_000,
};

/**
 * An RFC 5545 recurrence in `timezone` (DESIGN §6). The `rrule` package expands it on wall-clock
 * time and the occurrences are mapped to instants under the same DST rule as cron: a rule that
 * visits every hour (FREQ=HOURLY, MINUTELY or SECONDLY without BYHOUR) follows elapsed time, any
 * other is fixed-time. Without DTSTART the rule starts at `anchor`'s local time.
 */
export function compileRrule(text: string, timezone: string, anchor: Date, dst?: DstPolicy | null): Schedule {
  assertTimeZone(timezone);
  const recurrence = parseRecurrence(text, timezone);
  const dtstart = recurrence.dtstart ?? Math.floor(wallOf(anchor.getTime(), timezone) / 1000) * 1000;
  const walls = new RruleWalls(recurrence, dtstart);
  if (walls.nextWall(dtstart - 1) === null)
    throw new InvalidScheduleError('schedule.rrule', 'schedule.rrule has no occurrence at all');
  const rule = resolveDstRule(recurrence.rules.length > 0 && recurrence.rules.every(visitsEveryHour), dst);
  const timeline = timelineOf(timezone);
  return {
    next(after) {
      const at = nextFireInstant(walls, timeline, rule, after.getTime());
      return at === null ? null : new Date(at);
    },
  };
}

function visitsEveryHour(options: Partial<Options>): boolean {
  if (options.byhour != null) return false;
  const interval = options.interval ?? 1;
  if (options.freq === Frequency.HOURLY) return interval === 1;
  if (options.freq === Frequency.MINUTELY) return interval <= 60;
  return options.freq === Frequency.SECONDLY && interval <= 3600;
}

/**
 * Occurrences (wall times) of a recurrence, a chunk at a time. The `rrule` package walks from
 * DTSTART on every call, so for fixed-length frequencies without COUNT the rule is re-based a
 * whole number of periods later — the same occurrences, without walking years of minutes.
 */
class RruleWalls implements WallSource {
  private walls: number[] = [];
  /** Every occurrence in (from, to] is in `walls`. */
  private from = 0;
  private to = -Infinity;

  constructor(
    private readonly recurrence: Recurrence,
    private readonly dtstart: number,
  ) {}

  nextWall(wall: number): number | null {
    for (let cursor = wall; ; cursor = this.to) {
      if (!(cursor >= this.from && cursor < this.to)) this.refill(cursor);
      const i = upperBound(this.walls, wall);
      if (i < this.walls.length) return this.walls[i]!;
      if (this.to === Infinity) return null;
    }
  }

  private refill(cursor: number): void {
    const set = this.setFrom(cursor);
    const first = set.after(new Date(cursor), false);
    this.from = cursor;
    if (!first) {
      [this.walls, this.to] = [[], Infinity];
      return;
    }
    const chunk = set.between(new Date(cursor), new Date(first.getTime() + SPAN), false, (_d, n) => n < CHUNK);
    this.walls = chunk.map((d) => d.getTime());
    this.to = chunk.length === CHUNK ? this.walls[CHUNK - 1]! : first.getTime() + SPAN - 1;
  }

  private setFrom(cursor: number): InstanceType<typeof RRuleSet> {
    const set = new RRuleSet(true);
    for (const options of this.recurrence.rules) {
      let start = this.dtstart;
      const period = PERIOD[options.freq!];
      if (period !== undefined && options.count == null) {
        const periods = Math.floor((cursor - start) / (period * (options.interval ?? 1))) - 1;
        if (periods > 0) start += periods * period * (options.interval ?? 1);
      }
      set.rrule(new RRule({ ...options, dtstart: new Date(start) }, true));
    }
    for (const rdate of this.recurrence.rdates) set.rdate(new Date(rdate));
    for (const exdate of this.recurrence.exdates) set.exdate(new Date(exdate));
    return set;
  }
}

function upperBound(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
