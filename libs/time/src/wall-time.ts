import { timelineOf } from './zone-timeline.js';

const HOUR = 3_600_000;

/** Where a wall time falls in a zone: the instants that show it, or the gap that swallows it. */
export interface WallMapping {
  /** Instants whose local time is the wall time, ascending: one, two (an overlap) or none (a gap). */
  instants: number[];
  /** For a gap: the offsets before and after it and the instant it ends (the transition). */
  gap?: { before: number; after: number; end: number };
}

/**
 * The real instants at which the clocks of `zone` show `wall` (ms of a UTC-labelled clock). Any
 * offset lies within ±15 h, so the segments of instants `wall ∓ 15 h` hold every candidate —
 * whatever the size (30 min, 2 h) or the time of day (midnight) of the transitions between.
 */
export function instantsOfWall(wall: number, zone: string): WallMapping {
  const timeline = timelineOf(zone);
  const instants: number[] = [];
  let gap: WallMapping['gap'];
  for (
    let seg = timeline.segmentAt(wall - 15 * HOUR);
    seg.start <= wall + 15 * HOUR;
    seg = timeline.segmentAt(seg.end)
  ) {
    const t = wall - seg.offset;
    if (t >= seg.start && t < seg.end && !instants.includes(t)) instants.push(t);
    if (seg.prev < seg.offset && wall >= seg.start + seg.prev && wall < seg.start + seg.offset) {
      gap = { before: seg.prev, after: seg.offset, end: seg.start };
    }
  }
  instants.sort((a, b) => a - b);
  return instants.length > 0 ? { instants } : { instants, gap };
}
