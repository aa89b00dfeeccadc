/** What a call given up on before its batch left is rejected with: it was never sent. */
export class AbandonedError extends Error {
  override readonly name = 'AbandonedError';
  constructor() {
    super('given up on before it was sent');
  }
}

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Coalesces concurrent calls into batched ones. Calls made in the same turn of the event loop
 * leave together at its end (jobs whose slot fires at the same instant share one claim); calls made
 * while `maxInFlight` batches run wait and leave together in the next batch (up to `maxBatch`).
 * Under load a worker's 50 concurrent jobs thus share one statement instead of 50 round trips and
 * 50 commits; an idle worker pays one event-loop turn.
 *
 * `runBatch` returns one output per input, in order. If it throws, each call of that batch is
 * retried on its own with `runOne`, one after another in arrival order (one bad input must not
 * fail its neighbours, and of two calls that conflict the earlier wins, as without batching), and
 * gets its own answer or error; without `runOne`, or when `runAlone` says the error is not one to
 * retry alone (a lost connection: the batch may have committed), every call of the batch rejects
 * with the error.
 *
 * A call whose input `abandoned` says was given up on (its caller stopped waiting) before its batch
 * leaves is not sent: it rejects with {@link AbandonedError}.
 */
export class Batcher<I, O> {
  private readonly pending: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly runBatch: (inputs: I[]) => Promise<O[]>,
    private readonly runOne: ((input: I) => Promise<O>) | null = null,
    private readonly maxBatch = 100,
    private readonly maxInFlight = 1,
    private readonly runAlone: (error: unknown) => boolean = () => true,
    private readonly abandoned: (input: I) => boolean = () => false,
  ) {}

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.pending.length > 0) {
      const batch = this.pending
        .splice(0, this.maxBatch)
        .filter((p) => !this.abandoned(p.input) || (p.reject(new AbandonedError()), false));
      if (batch.length === 0) continue;
      this.inFlight += 1;
      this.runBatch(batch.map((p) => p.input))
        .then(
          (outputs) => batch.forEach((p, i) => p.resolve(outputs[i]!)),
          (error: unknown) =>
            this.runOne && this.runAlone(error)
              ? this.runEachAlone(batch, this.runOne)
              : batch.forEach((p) => p.reject(error)),
        )
        .finally(() => {
          this.inFlight -= 1;
          this.flush();
        });
    }
  }

  private async runEachAlone(batch: Pending<I, O>[], runOne: (input: I) => Promise<O>): Promise<void> {
    for (const p of batch) {
      if (this.abandoned(p.input)) p.reject(new AbandonedError());
      else await runOne(p.input).then(p.resolve, p.reject);
    }
  }
}
