import type { AttemptsRepository } from '@punctual/db';

/** Why an attempt's signal aborted. */
export type AbortCause = 'timeout' | 'cancelled' | 'lease_lost' | 'shutdown';

export class AttemptAbortedError extends Error {
  override readonly name = 'AttemptAbortedError';
  constructor(readonly reason: AbortCause) {
    super(`attempt aborted: ${reason}`);
  }
}

/**
 * The life of one running attempt: an AbortSignal for the handler that fires on timeout, cancel,
 * lease loss or shutdown, and a lease renewed every `leaseMs / 3` fenced by `attempt_id`.
 */
export class AttemptControl {
  private readonly controller = new AbortController();
  private readonly timers: NodeJS.Timeout[] = [];
  private abortCause: AbortCause | null = null;
  /** Rejects with {@link AttemptAbortedError} when the attempt is aborted; never resolves otherwise. */
  readonly aborted: Promise<never>;

  constructor(
    readonly executionId: string,
    readonly attemptId: string,
    private readonly attempts: Pick<AttemptsRepository, 'renewLease'>,
    leaseMs: number,
    timeoutMs: number,
  ) {
    this.aborted = new Promise<never>((_, reject) => {
      this.controller.signal.addEventListener('abort', () => reject(new AttemptAbortedError(this.abortCause ?? 'cancelled')), { once: true });
    });
    this.aborted.catch(() => undefined);
    this.timers.push(setTimeout(() => this.abort('timeout'), timeoutMs));
    this.timers.push(setInterval(() => void this.renew(leaseMs), Math.max(100, Math.floor(leaseMs / 3))));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cause(): AbortCause | null {
    return this.abortCause;
  }

  abort(cause: AbortCause): void {
    if (this.abortCause) return;
    this.abortCause = cause;
    this.controller.abort(new AttemptAbortedError(cause));
  }

  /** Stops the timers; the attempt is over. */
  finish(): void {
    this.timers.forEach((t) => clearTimeout(t));
  }

  private async renew(leaseMs: number): Promise<void> {
    try {
      if (!(await this.attempts.renewLease(this.executionId, this.attemptId, leaseMs))) this.abort('lease_lost');
    } catch {
      // Postgres unreachable: keep running; the lease still covers us until it expires, and the
      // final write is fenced anyway.
    }
  }
}
