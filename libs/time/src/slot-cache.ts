import { offsetAt, wallOf } from './wall-clock.js';

/** Walls computed per fill: small at first (sparse schedules need few), doubling to a cap. */
const FIRST_CHUNK = 8;
const MAX_CHUNK = 256;
const DAY = 86_400_000;

/**
 * Slots of one wall-clock schedule in one zone, computed a chunk at a time and kept: consecutive
 * `next()` calls — a planner walking a cursor, many tasks sharing an expression — cost a binary
 * search instead of a cron evaluation.
 */
export class WallSlotCache {
  private instants: number[] = [];
  private chunk = FIRST_CHUNK;
  /** Every slot in [from, to] is in `instants`. */
  private from = Infinity;
  private to = -Infinity;

  constructor(
    private readonly zone: string,
    /** Matching wall times after `fromWall`: at least `count` and past `pastWall`, unless the schedule ends. */
    private readonly wallsFrom: (fromWall: number, pastWall: number, count: number) => { walls: number[]; exhausted: boolean },
    private readonly toInstants: (wall: number) => number[],
  ) {}

  next(after: Date): Date | null {
    const t = after.getTime();
    // `probe`: from where the cache must cover; every instant in [t, probe) is known to be no slot.
    let probe = t;
    for (let round = 0; round < 64; round += 1) {
      if (!(probe >= this.from && probe < this.to)) this.fill(probe);
      const i = upperBound(this.instants, t);
      if (i < this.instants.length && this.instants[i]! <= this.to) return new Date(this.instants[i]!);
      if (this.to === Infinity) return null;
      probe = this.to;
    }
    return null;
  }

  /**
   * Computes the slots whose wall times follow `wall(start)`, reaching back only as far as a nearby
   * transition requires (a repeated hour can put later instants at earlier wall times).
   */
  private fill(start: number): void {
    const offsets = [start - DAY, start, start + DAY].map((x) => offsetAt(x, this.zone));
    const lookback = Math.max(...offsets) - Math.min(...offsets);
    const startWall = wallOf(start, this.zone);
    const fromWall = startWall - lookback - 1;
    const walls = this.wallsFrom(fromWall, startWall, this.chunk);
    this.chunk = Math.min(MAX_CHUNK, this.chunk * 2);
    const instants = walls.walls.flatMap((w) => this.toInstants(w)).sort((a, b) => a - b);
    // An instant is covered when the wall time it shows lies in (fromWall, lastWall].
    const lastWall = walls.exhausted ? Infinity : walls.walls[walls.walls.length - 1]!;
    const endOffsets = lastWall === Infinity ? [0] : [lastWall - DAY, lastWall, lastWall + DAY].map((x) => offsetAt(x, this.zone));
    this.from = start;
    this.to = lastWall === Infinity ? Infinity : lastWall - Math.max(...endOffsets) - 1;
    this.instants = dedupe(instants);
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

function dedupe(sorted: number[]): number[] {
  return sorted.filter((v, i) => i === 0 || v !== sorted[i - 1]);
}
