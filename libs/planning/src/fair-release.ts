import type { Trigger } from './planned-execution.js';

/**
 * The runs released at a rate rather than at once: catch-up runs (a misfire policy's, a resume's
 * `catchUp`) and backfills — a backlog, which may be a day of a namespace's slots. Slots on their
 * schedule and runs an operator asked for now are never held.
 */
export function isBacklog(trigger: Trigger | undefined): boolean {
  return trigger === 'catchup' || trigger === 'backfill';
}

/** A run the gate holds: its namespace is its lane. */
export interface Releasable {
  id: string;
  namespace: string;
}

/**
 * Backlog runs released within a rate (runs a second), round-robin across namespaces: the turns go
 * in name order, one run each (its namespace's oldest), so a namespace with 100,000 missed slots
 * takes one turn in each round like a namespace with one. A token bucket holds the rate: it
 * fills at `ratePerS` up to one second's worth (a quiet gate releases at most that at once).
 * Pure: the caller says the time.
 */
export class FairRelease<T extends Releasable> {
  private readonly lanes = new Map<string, T[]>();
  private readonly held = new Set<string>();
  /** The namespaces with runs held, in name order: the order of their turns. */
  private readonly order: string[] = [];
  /** The namespace that had the last turn: the next goes to the one after it. */
  private last: string | null = null;
  private tokens: number;
  private filledAt: number | null = null;

  constructor(private readonly ratePerS: number) {
    this.tokens = ratePerS;
  }

  /** Holds the runs not held already (a sweep may find a held run again), each at the end of its namespace's lane. */
  add(items: Iterable<T>): void {
    for (const item of items) {
      if (this.held.has(item.id)) continue;
      this.held.add(item.id);
      let lane = this.lanes.get(item.namespace);
      if (!lane) {
        this.lanes.set(item.namespace, (lane = []));
        this.order.splice(firstAfter(this.order, item.namespace), 0, item.namespace);
      }
      lane.push(item);
    }
  }

  has(id: string): boolean {
    return this.held.has(id);
  }

  get size(): number {
    return this.held.size;
  }

  /** Runs held per namespace. */
  backlog(): Map<string, number> {
    return new Map([...this.lanes].map(([namespace, lane]) => [namespace, lane.length]));
  }

  /** The runs the rate allows at `nowMs`, round-robin across namespaces, each namespace's oldest first. */
  take(nowMs: number): T[] {
    if (this.filledAt !== null)
      this.tokens = Math.min(this.ratePerS, this.tokens + (Math.max(0, nowMs - this.filledAt) / 1000) * this.ratePerS);
    // A clock that stepped back keeps the later instant: the bucket refills from there, never below it.
    this.filledAt = Math.max(nowMs, this.filledAt ?? nowMs);
    const out: T[] = [];
    while (this.tokens >= 1 && this.held.size > 0) {
      const at = this.last === null ? 0 : firstAfter(this.order, this.last);
      const index = at < this.order.length ? at : 0;
      const namespace = this.order[index]!;
      const lane = this.lanes.get(namespace)!;
      const item = lane.shift()!;
      if (lane.length === 0) {
        this.lanes.delete(namespace);
        this.order.splice(index, 1);
      }
      this.held.delete(item.id);
      this.last = namespace;
      out.push(item);
      this.tokens -= 1;
    }
    return out;
  }

  /** Forgets every held run (a leader stepping down: its successor finds them in Postgres). */
  clear(): void {
    this.lanes.clear();
    this.held.clear();
    this.order.length = 0;
    this.last = null;
  }
}

/** The index of the first name after `name` in the sorted `names` (binary search). */
function firstAfter(names: readonly string[], name: string): number {
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (names[mid]! <= name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
