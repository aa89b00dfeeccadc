import { zoneOffsetMs } from './zone.js';

const MINUTE = 60_000;
const WEEK = 7 * 86_400_000;
const DAY = 86_400_000;

/** A zone's offsets over one UTC year: `offsets[i]` holds from `starts[i]` until the next start. */
interface YearOffsets {
  starts: number[];
  offsets: number[];
}
const years = new Map<string, YearOffsets>();

/**
 * The zone's UTC offset at `instant` (ms), from a per-zone, per-year table of its transitions. The
 * table samples the offset weekly (no zone changes twice within a week) and pins each change to
 * the minute by bisection (transitions fall on whole minutes); after that a lookup costs no Intl call.
 */
export function offsetAt(instant: number, zone: string): number {
  const year = new Date(instant).getUTCFullYear();
  const key = `${zone}|${year}`;
  let table = years.get(key);
  if (!table) {
    if (years.size > 50_000) years.clear();
    table = buildYear(zone, year);
    years.set(key, table);
  }
  let i = table.starts.length - 1;
  while (i > 0 && table.starts[i]! > instant) i -= 1;
  return table.offsets[i]!;
}

function buildYear(zone: string, year: number): YearOffsets {
  const start = Date.UTC(year, 0, 1);
  const end = Date.UTC(year + 1, 0, 1);
  const at = (t: number) => zoneOffsetMs(new Date(t), zone);
  const table: YearOffsets = { starts: [start], offsets: [at(start)] };
  let prevT = start;
  let prev = table.offsets[0]!;
  for (let t = Math.min(start + WEEK, end - 1); ; t = Math.min(t + WEEK, end - 1)) {
    const offset = at(t);
    if (offset !== prev) {
      // Bisect (prevT, t] for the first minute with the new offset.
      let lo = prevT;
      let hi = t;
      while (hi - lo > MINUTE) {
        const mid = Math.floor((lo + hi) / 2 / MINUTE) * MINUTE;
        if (at(mid) === prev) lo = mid;
        else hi = mid;
      }
      table.starts.push(Math.ceil(hi / MINUTE) * MINUTE);
      table.offsets.push(offset);
      prev = offset;
    }
    prevT = t;
    if (t >= end - 1) return table;
  }
}

/** Local wall time of an instant, as milliseconds of a UTC-labelled clock. */
export function wallOf(instant: number, zone: string): number {
  return instant + offsetAt(instant, zone);
}

export interface WallMapping {
  /** The instants showing this wall time: none (a gap), one, or two (a repeated hour). */
  instants: number[];
  /** For a gap: the offsets before and after it. */
  gap?: { before: number; after: number };
}

/**
 * The real instants at which the zone's clocks show `wall`. Offsets are read a day either side, so
 * 30-minute (Lord Howe), 2-hour (Troll) and midnight (Santiago, Havana) transitions all resolve.
 */
export function instantsOfWall(wall: number, zone: string): WallMapping {
  const before = offsetAt(wall - DAY, zone);
  const after = offsetAt(wall + DAY, zone);
  const candidates = before === after ? [wall - before] : [wall - before, wall - after];
  const instants = [...new Set(candidates.filter((t) => t + offsetAt(t, zone) === wall))].sort((a, b) => a - b);
  if (instants.length > 0 || before === after) {
    if (instants.length === 0) instants.push(...exactScan(wall, zone));
    return { instants };
  }
  return { instants, gap: { before: Math.min(before, after), after: Math.max(before, after) } };
}

/** Rare zones change offset twice within two days; fall back to the offsets around the wall time. */
function exactScan(wall: number, zone: string): number[] {
  const found = new Set<number>();
  for (let probe = wall - DAY; probe <= wall + DAY; probe += 3_600_000) {
    const t = wall - offsetAt(probe, zone);
    if (t + offsetAt(t, zone) === wall) found.add(t);
  }
  return [...found].sort((a, b) => a - b);
}

/** The instant a gap ends: the first instant after the clocks jumped (binary search on the offset). */
export function gapEnd(wall: number, zone: string, gap: { before: number; after: number }): number {
  let lo = wall - gap.after;
  let hi = wall - gap.before;
  while (hi - lo > MINUTE) {
    const mid = Math.floor((lo + hi) / 2 / MINUTE) * MINUTE;
    if (offsetAt(mid, zone) === gap.before) lo = mid;
    else hi = mid;
  }
  return Math.ceil(hi / MINUTE) * MINUTE;
}
