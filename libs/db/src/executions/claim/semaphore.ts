/** At most `width` tasks at a time, in arrival order. */
export class Semaphore {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly width: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A place given back goes straight to the next in line: no newcomer slips in between.
    if (this.running >= this.width) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.running += 1;
    try {
      return await task();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
