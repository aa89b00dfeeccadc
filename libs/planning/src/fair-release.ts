import type { Trigger } from './planned-execution.js';

/**
 * The runs released at a rate rather than at once: catch-up runs (a misfire policy's, a resume's
 * `catchUp`) and backfills — a backlog, which may be a day of a namespace's slots. Slots on their
 * schedule and runs an operator asked for now never wait here.
 */
export function isBacklog(trigger: Trigger | undefined): boolean {
  return trigger === 'catchup' || trigger === 'backfill';
}

/** A run waiting at the gate: its namespace takes turns with the others, its task (`group`) with the namespace's other tasks. */
export interface Releasable {
  id: string;
  namespace: string;
  /** Its task: a namespace's turns go task by task, so one task's catch-ups do not come one after another. */
  group: string;
}

/**
 * Keys taking turns in name order, each with a value (a queue): {@link next} is the one after the
 * last served, wrapping around.
 */
class Rotation<V> {
  private readonly values = new Map<string, V>();
  /** The keys in name order: the order of their turns. */
  private readonly order: string[] = [];
  /** The key that had the last turn: the next goes to the one after it. */
  private last: string | null = null;

  /** The key's value, made by `make` (and given its place in the turns) when it has none. */
  of(key: string, make: () => V): V {
    let value = this.values.get(key);
    if (value === undefined) {
      this.values.set(key, (value = make()));
      this.order.splice(firstAfter(this.order, key), 0, key);
    }
    return value;
  }

  get(key: string): V | undefined {
    return this.values.get(key);
  }

  /** The key whose turn it is, with its value; it becomes the last served. */
  next(): [string, V] | undefined {
    if (this.order.length === 0) return undefined;
    const at = this.last === null ? 0 : firstAfter(this.order, this.last);
    const key = this.order[at < this.order.length ? at : 0]!;
    this.last = key;
    return [key, this.values.get(key)!];
  }

  remove(key: string): void {
    if (!this.values.delete(key)) return;
    this.order.splice(firstAfter(this.order, key) - 1, 1);
  }

  get size(): number {
    return this.values.size;
  }

  entries(): IterableIterator<[string, V]> {
    return this.values.entries();
  }

  clear(): void {
    this.values.clear();
    this.order.length = 0;
    this.last = null;
  }
}

/**
 * Backlog runs released within a rate (runs a second), round-robin across namespaces: the turns go
 * in name order, one run each, so a namespace with 100,000 missed slots takes one turn in each
 * round like a namespace with one. Within a namespace its tasks take turns the same way, each
 * task's oldest run first: one task's hundred catch-ups do not all wait for each other while the
 * namespace's other tasks wait behind them. A token bucket keeps the rate: it fills at `ratePerS`
 * up to one second's worth (a quiet gate releases at most that at once). Pure: the caller says the
 * time.
 */
export class FairRelease<T extends Releasable> {
  private readonly namespaces = new Rotation<Rotation<T[]>>();
  private readonly waiting = new Set<string>();
  private tokens: number;
  private filledAt: number | null = null;

  constructor(private readonly ratePerS: number) {
    this.tokens = ratePerS;
  }

  /** Takes in the runs not waiting already (a sweep may find a waiting run again), each at the end of its task's queue. */
  add(items: Iterable<T>): void {
    for (const item of items) {
      if (this.waiting.has(item.id)) continue;
      this.waiting.add(item.id);
      this.namespaces
        .of(item.namespace, () => new Rotation<T[]>())
        .of(item.group, () => [])
        .push(item);
    }
  }

  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** Whether a run of the task (`group`) of `namespace` is waiting. */
  hasTask(namespace: string, group: string): boolean {
    return (this.namespaces.get(namespace)?.get(group)?.length ?? 0) > 0;
  }

  get size(): number {
    return this.waiting.size;
  }

  /** Runs waiting per namespace. */
  backlog(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [namespace, tasks] of this.namespaces.entries())
      counts.set(
        namespace,
        [...tasks.entries()].reduce((n, [, queue]) => n + queue.length, 0),
      );
    return counts;
  }

  /** The runs the rate allows at `nowMs`: namespaces in turn, and in each its tasks in turn, each task's oldest first. */
  take(nowMs: number): T[] {
    if (this.filledAt !== null)
      this.tokens = Math.min(this.ratePerS, this.tokens + (Math.max(0, nowMs - this.filledAt) / 1000) * this.ratePerS);
    // A clock that stepped back keeps the later instant: the bucket refills from there, never below it.
    this.filledAt = Math.max(nowMs, this.filledAt ?? nowMs);
    const out: T[] = [];
    while (this.tokens >= 1 && this.waiting.size > 0) {
      const [namespace, tasks] = this.namespaces.next()!;
      const [task, queue] = tasks.next()!;
      const item = queue.shift()!;
      if (queue.length === 0) tasks.remove(task);
      if (tasks.size === 0) this.namespaces.remove(namespace);
      this.waiting.delete(item.id);
      out.push(item);
      this.tokens -= 1;
    }
    return out;
  }

  /** Forgets every waiting run (a leader stepping down: its successor finds them in Postgres). */
  clear(): void {
    this.namespaces.clear();
    this.waiting.clear();
  }
}

/**
 * On-time slots first, in time as well as in the queue: a release of backlog runs steps aside when
 * an on-time slot fires within `aheadMs` (its push comes a lead before it) or fired within
 * `behindMs` — its runs are being claimed — so the backlog's runs are not claimed in the same
 * instant as the slots that are due. The release after takes what the skipped one was allowed (the
 * bucket keeps it), and at most `inARow` are skipped in a row, so however crowded the schedule the
 * rate keeps. Pure: the caller says the instants.
 */
export class OnTimeFirst {
  private skipped = 0;

  constructor(
    private readonly aheadMs: number,
    private readonly behindMs: number,
    private readonly inARow: number,
  ) {}

  /** Whether the release at `nowMs` steps aside, given the next on-time `fire_at` (null: none) and the latest fired. */
  yields(nowMs: number, nextOnTimeMs: number | null, lastOnTimeMs: number): boolean {
    const near = (at: number) => at >= nowMs - this.behindMs && at <= nowMs + this.aheadMs;
    if ((near(lastOnTimeMs) || (nextOnTimeMs !== null && near(nextOnTimeMs))) && this.skipped < this.inARow) {
      this.skipped++;
      return true;
    }
    this.skipped = 0;
    return false;
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
