/** A stretch of time in one zone with a single UTC offset: `[start, end)`, all in epoch ms. */
export interface Segment {
  start: number;
  end: number;
  offset: number;
  /** The offset just before `start` (equal to `offset` when `start` is only a year boundary). */
  prev: number;
  /** The offset from `end` on. */
  next: number;
}

interface YearTable {
  start: number;
  end: number;
  /** starts[0] is the year's first instant; the others are the offset changes inside the year. */
  starts: number[];
  offsets: number[];
  before: number;
  after: number;
}

const SECOND = 1_000;
/**
 * Offsets are sampled once a day and each change is then pinned to the second by bisection (about
 * 400 `Intl` calls per zone-year, well under a millisecond). A pair of changes that cancel out
 * within one day would be missed; checked against 6-hourly probes, no zone has one in 1970–2037.
 */
const SAMPLE = 24 * 3_600_000;
const MAX_YEARS = 64;

/**
 * The offset history of one IANA zone, read from `Intl` once per (zone, year) and kept as a short
 * table of transitions. Every later question — the offset of an instant, the segment around it —
 * is a lookup, which is what keeps slot computation in the sub-microsecond range.
 */
export class ZoneTimeline {
  private readonly years = new Map<number, YearTable>();
  private readonly format: Intl.DateTimeFormat;
  private last: YearTable | undefined;
  private lastSegment: Readonly<Segment> | undefined;

  constructor(readonly zone: string) {
    // The cheapest output that carries the offset: "2026, GMT+10:30" (a date part is always printed).
    this.format = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'shortOffset', year: 'numeric' });
  }

  /** The UTC offset (ms, positive east) in force at `instant`. */
  offsetAt(instant: number): number {
    const table = this.tableOf(instant);
    return table.offsets[indexIn(table, instant)]!;
  }

  /**
   * The segment of constant offset containing `instant`. Tables are per year, so a segment that
   * reaches a year boundary is joined with its neighbour across it: `prev` and `next` then name
   * real changes within a year either side, which the DST rule needs at a New Year transition.
   */
  segmentAt(instant: number): Readonly<Segment> {
    const cached = this.lastSegment;
    if (cached && instant >= cached.start && instant < cached.end) return cached;
    const table = this.tableOf(instant);
    const i = indexIn(table, instant);
    const offset = table.offsets[i]!;
    let [start, prev] = i === 0 ? [table.start, table.before] : [table.starts[i]!, table.offsets[i - 1]!];
    const last = i === table.starts.length - 1;
    let [end, next] = last ? [table.end, table.after] : [table.starts[i + 1]!, table.offsets[i + 1]!];
    if (i === 0 && prev === offset) {
      const before = this.tableOf(start - 1);
      const j = before.starts.length - 1;
      [start, prev] = j === 0 ? [before.start, before.before] : [before.starts[j]!, before.offsets[j - 1]!];
    }
    if (last && next === offset) {
      const after = this.tableOf(end);
      [end, next] = after.starts.length > 1 ? [after.starts[1]!, after.offsets[1]!] : [after.end, after.after];
    }
    return (this.lastSegment = { start, end, offset, prev, next });
  }

  private tableOf(instant: number): YearTable {
    const cached = this.last;
    if (cached && instant >= cached.start && instant < cached.end) return cached;
    const year = new Date(instant).getUTCFullYear();
    if (Number.isNaN(year)) throw new RangeError(`instant ${instant} is outside the supported range`);
    let table = this.years.get(year);
    if (!table) {
      if (this.years.size >= MAX_YEARS) this.years.clear();
      table = this.buildYear(year);
      this.years.set(year, table);
    }
    this.last = table;
    return table;
  }

  private buildYear(year: number): YearTable {
    const start = Date.UTC(year, 0, 1);
    const end = Date.UTC(year + 1, 0, 1);
    const starts = [start];
    const offsets = [this.rawOffset(start)];
    let lo = start;
    let loOffset = offsets[0]!;
    for (let probe = start + SAMPLE; lo < end - SECOND;) {
      const hi = Math.min(probe, end - SECOND);
      const hiOffset = this.rawOffset(hi);
      if (hiOffset === loOffset) {
        lo = hi;
        probe = hi + SAMPLE;
        continue;
      }
      // The first second in (lo, hi] whose offset differs from lo's: a transition.
      let a = lo;
      let b = hi;
      while (b - a > SECOND) {
        const mid = a + Math.floor((b - a) / 2 / SECOND) * SECOND;
        if (this.rawOffset(mid) === loOffset) a = mid;
        else b = mid;
      }
      loOffset = this.rawOffset(b);
      starts.push(b);
      offsets.push(loOffset);
      lo = b; // re-examine (b, hi]: a second change may share the same sample window
    }
    return { start, end, starts, offsets, before: this.rawOffset(start - SECOND), after: this.rawOffset(end) };
  }

  /** `Intl` prints the offset as `GMT`, `GMT+11`, `GMT+5:30`, or `GMT-4:56:02` (a historical local mean time). */
  private rawOffset(instant: number): number {
    const text = this.format.format(instant);
    const at = text.lastIndexOf('GMT');
    const m = /^([+\-\u2212])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(text.slice(at + 3));
    if (!m) return 0;
    const ms = ((Number(m[2]) * 60 + Number(m[3] ?? 0)) * 60 + Number(m[4] ?? 0)) * SECOND;
    return m[1] === '+' ? ms : -ms;
  }
}

function indexIn(table: YearTable, instant: number): number {
  const { starts } = table;
  let i = starts.length - 1;
  while (i > 0 && starts[i]! > instant) i -= 1;
  return i;
}

const timelines = new Map<string, ZoneTimeline>();

/** The shared, memoised timeline of `zone` (which must be a valid IANA name). */
export function timelineOf(zone: string): ZoneTimeline {
  let timeline = timelines.get(zone);
  if (!timeline) {
    timeline = new ZoneTimeline(zone);
    timelines.set(zone, timeline);
  }
  return timeline;
}

/** The zone's UTC offset at `instant`, in ms (positive east of Greenwich). */
export function offsetAt(instant: number, zone: string): number {
  return timelineOf(zone).offsetAt(instant);
}

/** The local wall time of `instant` in `zone`, as ms of a UTC-labelled clock. */
export function wallOf(instant: number, zone: string): number {
  return instant + offsetAt(instant, zone);
}
