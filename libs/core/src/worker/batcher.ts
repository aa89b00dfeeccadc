interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Coalesces concurrent calls into batched ones. A call made while fewer than `maxInFlight` batches
 * run goes out at once (no added latency when idle); calls made while they run wait and leave
 * together in the next batch (up to `maxBatch`). Under load a worker's 50 concurrent jobs thus
 * share one claim statement instead of 50 round trips and 50 commits.
 *
 * `runBatch` returns one output per input, in order; if it throws, every call of that batch
 * rejects with the error.
 */
export class Batcher<I, O> {
  private readonly pending: Pending<I, O>[] = [];
  private inFlight = 0;

  constructor(
    private readonly runBatch: (inputs: I[]) => Promise<O[]>,
    private readonly maxBatch = 100,
    private readonly maxInFlight = 1,
  ) {}

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    if (this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    const batch = this.pending.splice(0, this.maxBatch);
    this.inFlight += 1;
    this.runBatch(batch.map((p) => p.input))
      .then(
        (outputs) => batch.forEach((p, i) => p.resolve(outputs[i]!)),
        (error: unknown) => batch.forEach((p) => p.reject(error)),
      )
      .finally(() => {
        this.inFlight -= 1;
        this.flush();
      });
  }
}
