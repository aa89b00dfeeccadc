/**
 * The worker's handler slots (WORKER_CONCURRENCY): at most that many attempts hold one at a time,
 * from their claim to the end of their handler. Jobs beyond them are already taken from the queue
 * (prefetched): their holds, reads and outcome writes happen while the slots run handlers, so a
 * slot does not sit idle through Postgres round trips. Waiters are served in arrival order.
 */
export class HandlerSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Resolves with the slot's release once one is free. */
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    };
  }

  get inUse(): number {
    return this.size - this.free;
  }
}
