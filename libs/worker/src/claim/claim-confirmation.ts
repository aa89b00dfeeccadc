import type { Logger } from '@nestjs/common';
import { type ClaimsRepository, isConnectionError } from '@punctual/db';
import { withPinnedDefinition } from '@punctual/planning';
import type { ClaimRequest, Disposition } from './disposition.js';
import type { LeasePolicy } from '../run/lease-policy.js';

/** How long a claim whose answer was lost with its connection keeps asking Postgres whether it committed. */
const CONFIRM_FOR_MS = 5_000;
/** How long a job waits before it is tried again when Postgres did not answer its claim. */
export const UNREACHABLE_RETRY_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Postgres did not answer a claim's statement in time (a network partition leaves it hanging with
 * no error): the job is handed back to the queue instead of being held — another worker may reach
 * Postgres. Its code makes it a connection error (see `isConnectionError`).
 */
export class ClaimTimeoutError extends Error {
  override readonly name = 'ClaimTimeoutError';
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`Postgres did not answer the claim within ${ms} ms`);
  }
}

/**
 * `promise`, or a {@link ClaimTimeoutError} after `ms` (the statement itself is left to finish or
 * fail); `gaveUp` is told when the wait ends unanswered.
 */
export function answeredWithin<T>(promise: Promise<T>, ms: number, gaveUp?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => (gaveUp?.(), reject(new ClaimTimeoutError(ms))), ms)),
  );
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A claim whose answer was lost with its connection may have committed: asks until Postgres
 * answers. A claim that did commit runs if enough of its lease is left, and is given back without
 * spending the attempt otherwise (its handler never started); one that did not is judged again.
 */
export class ClaimConfirmation {
  constructor(
    private readonly claims: ClaimsRepository,
    private readonly lease: Pick<LeasePolicy, 'answerWithinMs' | 'minLeaseLeftMs' | 'leaseMs'>,
    private readonly logger: Logger,
  ) {}

  /** What the claim comes to once Postgres answers; null when it is not this worker's: read and judge it again. */
  async confirm(request: ClaimRequest, cause: unknown): Promise<Disposition | null> {
    this.logger.warn(
      { executionId: request.id, err: cause },
      'the claim lost its connection; asking whether it committed',
    );
    const deadline = performance.now() + CONFIRM_FOR_MS;
    for (let wait = 100; ; wait = Math.min(1_000, wait * 2)) {
      await sleep(wait);
      let read: Awaited<ReturnType<ClaimsRepository['readClaimed']>>;
      try {
        read = await answeredWithin(this.claims.readClaimed(request.id), this.lease.answerWithinMs);
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        // Still unreachable. If the claim commits after all (it was on its way), it is given back
        // unspent as soon as Postgres answers — not left to lapse and spend the attempt unrun.
        if (performance.now() > deadline) {
          void this.giveBackIfCommitted(request); // never rejects: it gives up on any other error
          return { kind: 'later', why: 'unreachable', afterMs: UNREACHABLE_RETRY_MS };
        }
        continue;
      }
      const e = read?.execution;
      if (!read || !e || e.status !== 'running' || e.attemptId !== request.attemptId) return null;
      const leftMs = (e.leaseUntil?.getTime() ?? 0) - read.now.getTime();
      if (read.task && leftMs >= this.lease.minLeaseLeftMs) {
        return {
          kind: 'run',
          execution: e,
          task: withPinnedDefinition(read.task, e.pinnedDefinition),
          leaseValidUntil: performance.now() + leftMs,
        };
      }
      await this.claims.giveBack(e.id, request.attemptId, 'the claim was confirmed too late to run within its lease');
      return null;
    }
  }

  /**
   * A claim given up on may still commit (its statement reached Postgres): for as long as its lease
   * would last, gives it back whenever it has — fenced by its `attempt_id`, so a claim that never
   * committed changes nothing. After 1 s, then less and less often (a struggling database is not
   * asked much), only for claims given up on unanswered.
   */
  private async giveBackIfCommitted(request: ClaimRequest): Promise<void> {
    const until = performance.now() + this.lease.leaseMs;
    for (let wait = 1_000; performance.now() < until; wait = Math.min(8_000, wait * 2)) {
      await sleep(wait);
      try {
        if (
          await answeredWithin(
            this.claims.giveBack(request.id, request.attemptId, 'the claim committed after the worker gave up on it'),
            this.lease.answerWithinMs,
          )
        ) {
          this.logger.warn({ executionId: request.id }, 'a claim given up on committed after all; given back unspent');
          return;
        }
      } catch (error) {
        if (!isConnectionError(error)) return;
      }
    }
  }
}
