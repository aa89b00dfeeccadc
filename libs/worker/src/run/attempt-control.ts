import type { AbortCause } from '../outcome/failure-judgement.js';
import type { LeasePolicy } from './lease-policy.js';

export type { AbortCause };

export class AttemptAbortedError extends Error {
  override readonly name = 'AttemptAbortedError';
  constructor(readonly reason: AbortCause) {
    super(`attempt aborted: ${reason}`);
  }
}

/**
 * The life of one running attempt: an AbortSignal for the handler that fires on timeout, cancel,
 * shutdown, or when its lease is about to end without having been renewed (see `LeaseKeeper`,
 * which renews it). Times are on this process's monotonic clock (`performance.now()`).
 */
export class AttemptControl {
  private readonly controller = new AbortController();
  private readonly timeoutTimer: NodeJS.Timeout;
  private leaseTimer: NodeJS.Timeout | null = null;
  private abortCause: AbortCause | null = null;
  private ownershipLost = false;
  /** Rejects with {@link AttemptAbortedError} when the attempt is aborted; never resolves otherwise. */
  readonly aborted: Promise<never>;
  readonly startedAt: number;
  /** When the lease was last known to be extended (its claim, or its last renewal). */
  renewedAt: number;

  constructor(
    readonly executionId: string,
    readonly attemptId: string,
    private readonly lease: Pick<LeasePolicy, 'leaseMs' | 'abortMarginMs'>,
    timeoutMs: number,
    leaseValidUntil: number,
  ) {
    this.aborted = new Promise<never>((_, reject) => {
      this.controller.signal.addEventListener(
        'abort',
        () => reject(new AttemptAbortedError(this.abortCause ?? 'cancelled')),
        { once: true },
      );
    });
    // Not an error let pass: the rejection is for whoever races `aborted`; this only keeps an
    // attempt that ends without anyone racing it from raising an unhandled rejection.
    this.aborted.catch(() => undefined);
    this.startedAt = performance.now();
    this.renewedAt = leaseValidUntil - lease.leaseMs;
    this.timeoutTimer = setTimeout(() => this.abort('timeout'), timeoutMs);
    this.leaseHeldUntil(leaseValidUntil);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cause(): AbortCause | null {
    return this.abortCause;
  }

  /** The lease holds at least until `validUntil`: the attempt aborts a margin before, unless extended again. */
  leaseHeldUntil(validUntil: number): void {
    this.renewedAt = validUntil - this.lease.leaseMs;
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    this.leaseTimer = setTimeout(
      () => this.abort('lease_lost'),
      Math.max(0, validUntil - this.lease.abortMarginMs - performance.now()),
    );
  }

  /**
   * Postgres answered that the execution is no longer this attempt's (taken over, cancelled, ended
   * elsewhere): the handler is aborted, and an outcome not yet written need not be tried again.
   */
  disown(cause: Extract<AbortCause, 'cancelled' | 'lease_lost'>): void {
    this.ownershipLost = true;
    this.abort(cause);
  }

  /** Whether Postgres said the execution is no longer this attempt's (see {@link disown}). */
  get disowned(): boolean {
    return this.ownershipLost;
  }

  abort(cause: AbortCause): void {
    if (this.abortCause) return;
    this.abortCause = cause;
    this.controller.abort(new AttemptAbortedError(cause));
  }

  /** Stops the timers; the attempt is over. */
  finish(): void {
    clearTimeout(this.timeoutTimer);
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
  }
}
