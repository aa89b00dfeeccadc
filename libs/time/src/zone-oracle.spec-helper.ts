/**
 * A deliberately naive reference for the DST property tests: offsets straight from `Intl`
 * (formatToParts, not the library's timeline), and brute-force scans of a 15-minute grid near
 * each transition. Every offset in use since 1970 is a multiple of 15 minutes (checked below), so
 * any wall time on that grid is shown only at grid instants — the scan misses nothing.
 */
export const MINUTE = 60_000;
export const GRID = 15 * MINUTE;
export const DAY = 86_400_000;

export type Rule = { gap: 'shift' | 'skip' | 'end'; overlap: 'first' | 'last' | 'both' };

export class ZoneOracle {
  private readonly format: Intl.DateTimeFormat;
  private readonly memo = new Map<number, number>();
  /** Instants (UTC midnights) where the offset differs from the midnight before. */
  readonly changes: number[] = [];

  constructor(
    readonly zone: string,
    readonly from: number,
    readonly to: number,
  ) {
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    for (let t = from - 3 * DAY; t <= to + 3 * DAY; t += DAY)
      if (this.offset(t) !== this.offset(t - DAY)) this.changes.push(t);
  }

  offset(t: number): number {
    let o = this.memo.get(t);
    if (o === undefined) {
      const p: Record<string, number> = {};
      for (const part of this.format.formatToParts(t)) if (part.type !== 'literal') p[part.type] = Number(part.value);
      o = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) - t;
      if (o % GRID !== 0) throw new Error(`${this.zone}: offset ${o / MINUTE} min is not on the 15-minute grid`);
      this.memo.set(t, o);
    }
    return o;
  }

  /** Far from any transition the offset of the day's UTC midnight will do (and is already known). */
  wallOf(t: number): number {
    return t + this.offset(this.nearChange(t) ? t : Math.floor(t / DAY) * DAY);
  }

  /** True when a transition may lie near `t` (closer than the ±15 h any offset spans, with margin). */
  nearChange(t: number): boolean {
    return this.changes.some((c) => Math.abs(c - t) <= 2 * DAY);
  }

  /** Every instant whose local time is `wall` (on the grid), and for a gap the offsets around it. */
  instantsOf(wall: number): { instants: number[]; before?: number; after?: number } {
    if (!this.nearChange(wall)) return { instants: [wall - this.offset(Math.floor(wall / DAY) * DAY)] };
    const instants: number[] = [];
    let before: number | undefined;
    let after: number | undefined;
    for (let t = wall - 15 * 3_600_000; t <= wall + 15 * 3_600_000; t += GRID) {
      if (this.wallOf(t) === wall) instants.push(t);
      if (this.wallOf(t) < wall && this.wallOf(t + GRID) > wall)
        [before, after] = [this.offset(t), this.offset(t + GRID)];
    }
    return instants.length > 0 ? { instants } : { instants, before, after };
  }

  /** The instants a matching wall time fires at under `rule`, by DESIGN §6's words. */
  fireInstants(wall: number, rule: Rule): number[] {
    const { instants, before, after } = this.instantsOf(wall);
    if (instants.length === 0) {
      if (before === undefined || after === undefined)
        throw new Error(`${this.zone}: ${new Date(wall).toISOString()} neither shown nor in a gap`);
      if (rule.gap === 'skip') return [];
      if (rule.gap === 'shift') return [wall - before];
      let t = wall - after; // shows wall - gap, before the jump; walk to the first instant after it
      while (this.offset(t) === before) t += MINUTE;
      return [t];
    }
    if (instants.length === 1 || rule.overlap === 'both') return instants;
    return [rule.overlap === 'first' ? instants[0]! : instants[instants.length - 1]!];
  }

  /** Expected slots in (from, to] of a job firing at each of `walls`. */
  expected(walls: number[], rule: Rule): number[] {
    const all = walls.flatMap((w) => this.fireInstants(w, rule)).filter((t) => t > this.from && t <= this.to);
    return [...new Set(all)].sort((a, b) => a - b);
  }

  /** Local dates (as UTC-labelled midnights) covering the window, with a day of margin each side. */
  localDates(): number[] {
    const first = Math.floor(this.wallOf(this.from) / DAY) - 1;
    const last = Math.floor(this.wallOf(this.to) / DAY) + 1;
    return Array.from({ length: last - first + 1 }, (_, i) => (first + i) * DAY);
  }
}
