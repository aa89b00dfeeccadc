import { gapEnd, instantsOfWall, wallOf } from './wall-clock.js';

const DAY = 86_400_000;
const sameDate = (a: number, b: number) => Math.floor(a / DAY) === Math.floor(b / DAY);

/** How wall times that do not exist (gap) or occur twice (overlap) map to instants. */
export interface DstPolicy {
  gap?: 'shift' | 'skip' | 'end';
  overlap?: 'first' | 'last' | 'both';
}

/** DESIGN §6: fixed-time expressions shift through gaps and fire once in overlaps. */
export const FIXED_TIME_RULE: Required<DstPolicy> = { gap: 'shift', overlap: 'first' };
/** DESIGN §6: wildcard-hour expressions follow elapsed time — nothing in a gap, both passes of an overlap. */
export const ELAPSED_TIME_RULE: Required<DstPolicy> = { gap: 'skip', overlap: 'both' };

/** The instants a matching wall time fires at, under `rule`. */
export function fireInstants(wall: number, zone: string, rule: Required<DstPolicy>): number[] {
  const { instants, gap } = instantsOfWall(wall, zone);
  if (gap) {
    if (rule.gap === 'skip') return [];
    if (rule.gap === 'end') return [gapEnd(wall, zone, gap)];
    // shift: forward by the length of the gap (02:30 on a 1-hour gap → 03:30), RFC 5545 / Temporal
    // "compatible" — unless that leaves the local date (a gap ending at midnight, as in Nuuk's
    // 23:00 → 00:00): then back by the gap, so a daily job still fires once on that date.
    const forward = wall - gap.before;
    return [sameDate(wallOf(forward, zone), wall) ? forward : wall - gap.after];
  }
  if (instants.length < 2 || rule.overlap === 'both') return instants;
  return [rule.overlap === 'first' ? instants[0]! : instants[instants.length - 1]!];
}
