import type { AttemptsRepository } from '@punctual/db';
import type { AttemptControl } from './attempt-control.js';
import type { LeasePolicy } from './lease-policy.js';

/**
 * Keeps the leases of a worker's running attempts and tells each one when it is no longer its
 * execution's: one timer for all of them, one statement per tick for the leases due for renewal
 * (every third of the lease) and one read for the others that have run a while — cancelled
 * elsewhere (the pub/sub message may have been missed) or taken over. An attempt is aborted when
 * it is not its execution's any more (`cancelled`, or `lease_lost`); one whose lease cannot be
 * renewed (Postgres unreachable) is aborted by its own timer before the lease ends (see
 * `AttemptControl.leaseHeldUntil`), however long a statement here hangs.
 */
export class LeaseKeeper {
  private readonly attempts = new Set<AttemptControl>();
  /** Permits of handlers running on after their attempts ended (see AttemptsRepository.keepPermits), by attempt id. */
  private readonly permits = new Map<string, { permit: OverrunPermit; renewedAt: number; written: boolean }>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  readonly tickMs: number;

  constructor(
    private readonly repository: Pick<
      AttemptsRepository,
      'renewLeases' | 'notOwned' | 'keepPermits' | 'renewPermits' | 'dropPermits'
    >,
    private readonly lease: Pick<LeasePolicy, 'leaseMs' | 'renewAfterMs' | 'keeperTickMs'>,
    private readonly onError: (error: unknown) => void,
  ) {
    this.tickMs = lease.keeperTickMs;
  }

  start(): void {
    // A tick never rejects: a lease it could not renew is judged at the next one.
    this.timer ??= setInterval(() => void this.tick(), this.tickMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  track(control: AttemptControl): void {
    this.attempts.add(control);
  }

  untrack(control: AttemptControl): void {
    this.attempts.delete(control);
  }

  /**
   * Holds the permits of a handler running on after its attempt ended, renewed with the leases
   * until {@link dropPermit}: its key and its namespace's quota count it. Resolves once written.
   */
  async keepPermit(permit: OverrunPermit): Promise<void> {
    const entry = { permit, renewedAt: performance.now(), written: false };
    this.permits.set(permit.attemptId, entry);
    await this.repository.keepPermits(rowsOf([permit]), this.lease.leaseMs);
    entry.written = true;
  }

  /** Gives back every permit held here (the worker stops). */
  async dropPermits(): Promise<void> {
    const held = [...this.permits.keys()];
    this.permits.clear();
    await this.repository.dropPermits(held);
  }

  /** The handler settled: its permit (held here, or kept by the cancel that ended its attempt) is given back. */
  async dropPermit(attemptId: string): Promise<void> {
    this.permits.delete(attemptId);
    await this.repository.dropPermits([attemptId]);
  }

  /** Renews the permits due; a failure is reported and tried again next tick, never in the way of the leases. */
  private async renewPermits(now: number): Promise<void> {
    // One whose first write failed is written again at once.
    const unwritten = [...this.permits.values()].filter((p) => !p.written);
    const due = [...this.permits.values()].filter((p) => p.written && now - p.renewedAt >= this.lease.renewAfterMs);
    try {
      if (unwritten.length > 0) {
        await this.repository.keepPermits(rowsOf(unwritten.map((p) => p.permit)), this.lease.leaseMs);
        for (const p of unwritten) Object.assign(p, { written: true, renewedAt: now });
      }
      // Renews only (never inserts): a permit dropped while this was on its way stays dropped.
      if (due.length > 0) {
        await this.repository.renewPermits(
          due.map((p) => p.permit.attemptId),
          this.lease.leaseMs,
        );
        for (const p of due) p.renewedAt = now;
      }
    } catch (error) {
      this.onError(error);
    }
  }

  /** One round: renew what is due, check the rest. Skipped while the previous round still runs. */
  async tick(): Promise<void> {
    if (this.ticking || (this.attempts.size === 0 && this.permits.size === 0)) return;
    this.ticking = true;
    let permits: Promise<void> = Promise.resolve();
    try {
      const now = performance.now();
      // Side by side with the leases' statements (it never rejects): a slow one does not hold the leases back.
      permits = this.renewPermits(now);
      const all = [...this.attempts];
      const renew = all.filter((c) => now - c.renewedAt >= this.lease.renewAfterMs);
      const check = all.filter((c) => !renew.includes(c) && now - c.startedAt >= this.tickMs);
      if (renew.length > 0) {
        const sentAt = performance.now();
        const owned = await this.repository.renewLeases(renew.map(key), this.lease.leaseMs);
        for (const control of renew)
          if (owned.has(control.attemptId)) control.leaseHeldUntil(sentAt + this.lease.leaseMs);
        check.push(...renew.filter((c) => !owned.has(c.attemptId)));
      }
      const gone = await this.repository.notOwned(check.map(key));
      for (const control of check) {
        if (!gone.has(control.attemptId)) continue;
        control.disown(gone.get(control.attemptId) === 'cancelled' ? 'cancelled' : 'lease_lost');
      }
    } catch (error) {
      this.onError(error);
    } finally {
      await permits;
      this.ticking = false;
    }
  }
}

/**
 * The permits of a handler held past its attempt's end: one of each capacity its run took (its
 * concurrency key, its namespace's `maxConcurrentRuns` as `quotaFlowKey`).
 */
export interface OverrunPermit {
  attemptId: string;
  executionId: string;
  keys: string[];
}

/** The rows of these permits (a row per key). */
const rowsOf = (permits: OverrunPermit[]) =>
  permits.flatMap((p) => p.keys.map((key) => ({ attemptId: p.attemptId, executionId: p.executionId, key })));

const key = (control: AttemptControl) => ({ id: control.executionId, attemptId: control.attemptId });
