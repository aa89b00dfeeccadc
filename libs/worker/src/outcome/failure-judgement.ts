import { attemptsRemain } from '@punctual/planning';
import { retryDelayMs } from './backoff.js';

/** Why an attempt's signal aborted. */
export type AbortCause = 'timeout' | 'cancelled' | 'lease_lost' | 'shutdown';

/** What a failed attempt is judged by. */
export interface FailedAttempt {
  /** Why its signal aborted, if it did (the handler's error came from the abort). */
  cause: AbortCause | null;
  /** The handler threw `UnrecoverableError` (or `http` got a 4xx other than 408/429). */
  unrecoverable: boolean;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  maxAttempts: number;
  backoffMs: number;
  backoffMaxMs: number;
}

/**
 * - `cancelled`: cancelled (or replaced) while it ran: the execution was ended by whoever did it.
 * - `stale`: its lease was lost: another attempt owns the execution; nothing is written.
 * - `release`: the worker is shutting down: the attempt is handed back unspent for another worker.
 * - `retry`: the next attempt after `delayMs`.
 * - `dead`: no attempt left (or none worth making): the dead letter.
 */
export type FailureVerdict =
  | { kind: 'cancelled' }
  | { kind: 'stale' }
  | { kind: 'release' }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'dead' };

/**
 * What becomes of an attempt whose handler did not succeed (DESIGN §5 "Finish"), the whole rule in
 * one place: an abort decided elsewhere is not a failure of the handler; an unrecoverable error, or
 * the last attempt, is dead; any other failure retries with exponential backoff and jitter.
 */
export function judgeFailure(failed: FailedAttempt, random: () => number = Math.random): FailureVerdict {
  if (failed.cause === 'cancelled') return { kind: 'cancelled' };
  if (failed.cause === 'lease_lost') return { kind: 'stale' };
  if (failed.cause === 'shutdown') return { kind: 'release' };
  if (failed.unrecoverable || !attemptsRemain(failed.attempt, failed.maxAttempts)) return { kind: 'dead' };
  return { kind: 'retry', delayMs: retryDelayMs(failed.attempt, failed.backoffMs, failed.backoffMaxMs, random) };
}
