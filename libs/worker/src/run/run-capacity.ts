/**
 * The worker's run capacity (WORKER_CONCURRENCY): at most that many attempts take a place at a time,
 * from their claim to the end of their handler. Jobs beyond them are already taken from the queue
 * (prefetched): their waits, reads and outcome writes happen while the places run handlers, so a
 * place does not sit idle through Postgres round trips. Waiters are served in arrival order.
 */
export class RunCapacity {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Resolves, once a place is free, with the function that gives it back. */
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
