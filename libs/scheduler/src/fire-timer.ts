import type { Trigger } from '@punctual/planning';
/** An item the timer fires: anything with an id and an instant. */
export interface Timed {
  id: string;
  fireAt: Date;
}

/** A planned execution the leader fires. */
export interface Fireable extends Timed {
  /** The execution's task, carried by its job (see ExecutionJobData). */
  taskId?: string;
  /** The handler it runs: its job goes to that handler's queue. */
  handler: string;
  /** What started it: a backlog run (catch-up, backfill) is released within `CATCHUP_RATE`. */
  trigger?: Trigger;
  /** Its task's namespace (or its task's key, which names it): a backlog run's lane. */
  namespace?: string;
  taskName?: string;
  /** Its overlap policy is not `allow`: it cannot start before its task's earlier slots. */
  exclusive?: boolean;
}

/**
 * An in-memory min-heap of planned executions with a single `setTimeout` armed for the earliest.
 * At each due instant it hands every due item to `onFire` in one batch. An id is held once: added
 * again with another instant (an edit of the task's jitter moved its `fire_at`), it fires at the new
 * one, not the old.
 * With `leadMs`, an item is due `leadMs` before its `fireAt`: the queue round trip and the worker's
 * pick-up happen ahead of the slot, and the worker holds the job until `fireAt`.
 */
export class FireTimer<T extends Timed> {
  private readonly heap: T[] = [];
  /** Each id held, with the instant (epoch ms) it fires at; heap entries of another instant are stale. */
  private readonly ids = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private armedFor = Infinity;

  constructor(
    private readonly onFire: (due: T[]) => void,
    private readonly now: () => number = Date.now,
    private readonly leadMs = 0,
  ) {}

  get size(): number {
    return this.ids.size;
  }

  /** The earliest `fireAt` held (epoch ms), or null when empty. */
  nextFireAt(): number | null {
    return this.heap[0]?.fireAt.getTime() ?? null;
  }

  add(items: Iterable<T>): void {
    for (const item of items) {
      const at = item.fireAt.getTime();
      if (this.ids.get(item.id) === at) continue;
      // New, or moved: the entry at the old instant (if any) is skipped when it comes up.
      this.ids.set(item.id, at);
      this.push(item);
    }
    this.dropStaleTop();
    this.arm();
  }

  /** Drops everything (leadership lost). */
  clear(): void {
    this.heap.length = 0;
    this.ids.clear();
    this.disarm();
  }

  private arm(): void {
    const next = this.heap[0];
    if (!next) return this.disarm();
    const at = next.fireAt.getTime() - this.leadMs;
    if (this.timer && at >= this.armedFor) return;
    this.disarm();
    this.armedFor = at;
    this.timer = setTimeout(() => this.fireDue(), Math.max(0, at - this.now()));
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.armedFor = Infinity;
  }

  private fireDue(): void {
    this.timer = null;
    this.armedFor = Infinity;
    const horizon = this.now() + this.leadMs;
    const due: T[] = [];
    while (this.heap.length > 0 && this.heap[0]!.fireAt.getTime() <= horizon) {
      const item = this.pop();
      if (this.ids.get(item.id) !== item.fireAt.getTime()) continue;
      this.ids.delete(item.id);
      due.push(item);
    }
    this.dropStaleTop();
    if (due.length > 0) this.onFire(due);
    this.arm();
  }

  /** Entries of an instant their id no longer fires at, at the top: dropped, so the timer is armed for a live one. */
  private dropStaleTop(): void {
    while (this.heap.length > 0 && this.ids.get(this.heap[0]!.id) !== this.heap[0]!.fireAt.getTime()) this.pop();
  }

  private push(item: T): void {
    const heap = this.heap;
    heap.push(item);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.fireAt.getTime() <= heap[i]!.fireAt.getTime()) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  private pop(): T {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < heap.length && heap[l]!.fireAt.getTime() < heap[min]!.fireAt.getTime()) min = l;
        if (r < heap.length && heap[r]!.fireAt.getTime() < heap[min]!.fireAt.getTime()) min = r;
        if (min === i) break;
        [heap[min], heap[i]] = [heap[i]!, heap[min]!];
        i = min;
      }
    }
    return top;
  }
}
