import type { Logger } from '@nestjs/common';
import { type ClaimsRepository, isConnectionError } from '@punctual/db';
import { withPinnedDefinition } from '@punctual/planning';
import type { ClaimRequest, Disposition } from './disposition.js';
import type { LeasePolicy } from './lease-policy.js';

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
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => (gaveUp?.(), reject(new ClaimTimeoutError(ms))), ms)));
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
    private readonly lease: Pick<LeasePolicy, 'answerWithinMs' | 'minLeaseLeftMs'>,
    private readonly logger: Logger,
  ) {}

  async confirm(request: ClaimRequest, cause: unknown): Promise<Disposition | 'again'> {
    this.logger.warn({ executionId: request.id, err: cause }, 'the claim lost its connection; asking whether it committed');
    const deadline = performance.now() + CONFIRM_FOR_MS;
    for (let wait = 100; ; wait = Math.min(1_000, wait * 2)) {
      await sleep(wait);
      let read: Awaited<ReturnType<ClaimsRepository['readClaimed']>>;
      try {
        read = await answeredWithin(this.claims.readClaimed(request.id), this.lease.answerWithinMs);
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        // Still unreachable: if the claim did commit, its lease runs out and the reaper hands the slot on.
        if (performance.now() > deadline) return { kind: 'later', why: 'unreachable', afterMs: UNREACHABLE_RETRY_MS };
        continue;
      }
      const e = read?.execution;
      if (!read || !e || e.status !== 'running' || e.attemptId !== request.attemptId) return 'again';
      const leftMs = (e.leaseUntil?.getTime() ?? 0) - read.now.getTime();
      if (read.task && leftMs >= this.lease.minLeaseLeftMs) {
        return { kind: 'run', execution: e, task: withPinnedDefinition(read.task, e.pinnedDefinition), leaseValidUntil: performance.now() + leftMs };
      }
      await this.claims.giveBack(e.id, request.attemptId, 'the claim was confirmed too late to run within its lease');
      return 'again';
    }
  }
}
