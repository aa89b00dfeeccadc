import type { TRIGGERS } from '@punctual/contract';

/**
 * The one "late" rule (DESIGN §4 "Misfire and catch-up", §5 claim): a slot is late when it can no
 * longer start within `maxDelay` of its `fire_at` (the slot plus its jitter). Planning applies it to
 * slots not yet recorded, the leader's misfire pass to rows planned but not started, and the claim
 * to a first attempt about to start — all through this function (the leader's SQL finds candidates
 * with the same comparison; see `LeaderExecutionsRepository.listLateUnstarted`).
 */
export function isLate(fireAt: Date, maxDelayMs: number, now: Date): boolean {
  return now.getTime() - fireAt.getTime() > maxDelayMs;
}

/**
 * Whether lateness applies to an execution at all: only the first attempt of a scheduled slot. A
 * catch-up, manual or backfill run exists because its slot is already past — the misfire policy or
 * an operator decided it should run — and a retry finishes a slot that did start in time.
 */
export function canBeLate(execution: { trigger: (typeof TRIGGERS)[number]; attempt: number }): boolean {
  return execution.trigger === 'schedule' && execution.attempt === 0;
}
