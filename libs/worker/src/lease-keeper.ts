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
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  readonly tickMs: number;

  constructor(
    private readonly repository: Pick<AttemptsRepository, 'renewLeases' | 'notOwned'>,
    private readonly lease: Pick<LeasePolicy, 'leaseMs' | 'renewAfterMs' | 'keeperTickMs'>,
    private readonly onError: (error: unknown) => void,
  ) {
    this.tickMs = lease.keeperTickMs;
  }

  start(): void {
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

  /** One round: renew what is due, check the rest. Skipped while the previous round still runs. */
  async tick(): Promise<void> {
    if (this.ticking || this.attempts.size === 0) return;
    this.ticking = true;
    try {
      const now = performance.now();
      const all = [...this.attempts];
      const renew = all.filter((c) => now - c.renewedAt >= this.lease.renewAfterMs);
      const check = all.filter((c) => !renew.includes(c) && now - c.startedAt >= this.tickMs);
      if (renew.length > 0) {
        const sentAt = performance.now();
        const owned = await this.repository.renewLeases(renew.map(key), this.lease.leaseMs);
        for (const control of renew) if (owned.has(control.attemptId)) control.leaseHeldUntil(sentAt + this.lease.leaseMs);
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
      this.ticking = false;
    }
  }
}

const key = (control: AttemptControl) => ({ id: control.executionId, attemptId: control.attemptId });
