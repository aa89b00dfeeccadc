import type { DstPolicy } from './dst-policy.js';
import type { ZoneTimeline } from './zone-timeline.js';

/** Matching local wall times of an expression, independent of any zone (ms of a UTC-labelled clock). */
export interface WallSource {
  /** The first matching wall time strictly after `wall`, or `null` when there is none. */
  nextWall(wall: number): number | null;
}

/** Segments walked before giving up: 400 years (one Gregorian cycle) of a zone with two changes a year. */
const MAX_SEGMENTS = 5_000;

/**
 * The first instant strictly after `after` at which `source` fires in the zone of `timeline`,
 * under `rule` (DESIGN §6).
 *
 * The zone's time is walked as segments of constant offset. Inside a segment a wall time `w` is the
 * instant `w - offset`, so the answer is the first matching wall past `after`'s wall time, plus —
 * when the segment opens with a gap — the matching wall times the gap swallowed, mapped with the
 * offset from before the gap (`shift`: 02:30 → 03:30) or to the gap's end (`end`). An overlap is a
 * range of wall times shared by two adjacent segments; `first` drops it from the later segment,
 * `last` from the earlier one. Every instant a segment yields lies inside it, so the first
 * segment that yields anything holds the answer.
 */
export function nextFireInstant(
  source: WallSource,
  timeline: ZoneTimeline,
  rule: Required<DstPolicy>,
  after: number,
): number | null {
  let seg = timeline.segmentAt(after);
  for (let walked = 0; walked < MAX_SEGMENTS; walked += 1) {
    const low = Math.max(after, seg.start - 1); // instants must be > low
    let best = Infinity;

    let fromWall = low + seg.offset;
    if (rule.overlap === 'first' && seg.prev > seg.offset) fromWall = Math.max(fromWall, seg.start + seg.prev - 1);
    let untilWall = seg.end + seg.offset; // exclusive
    if (rule.overlap === 'last' && seg.next < seg.offset) untilWall = Math.min(untilWall, seg.end + seg.next);
    const wall = source.nextWall(fromWall);
    if (wall !== null && wall < untilWall) best = wall - seg.offset;

    if (seg.prev < seg.offset && rule.gap !== 'skip') {
      // Wall times in [gapFrom, gapUntil) never show on this zone's clocks.
      const gapFrom = seg.start + seg.prev;
      const gapUntil = seg.start + seg.offset;
      if (rule.gap === 'shift') {
        const swallowed = source.nextWall(Math.max(gapFrom - 1, low + seg.prev));
        if (swallowed !== null && swallowed < gapUntil) best = Math.min(best, swallowed - seg.prev);
      } else if (seg.start > low) {
        const swallowed = source.nextWall(gapFrom - 1);
        if (swallowed !== null && swallowed < gapUntil) best = Math.min(best, seg.start);
      }
    }
    if (best !== Infinity) return best;
    // Later segments only hold wall times from here on; none left means the schedule has ended.
    if (wall === null && source.nextWall(seg.end + Math.min(seg.offset, seg.next) - 1) === null) return null;
    seg = timeline.segmentAt(seg.end);
  }
  return null;
}
