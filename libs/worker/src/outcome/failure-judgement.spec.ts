import { describe, expect, it } from 'vitest';
import { type FailedAttempt, judgeFailure } from './failure-judgement.js';

const failed = (over: Partial<FailedAttempt> = {}): FailedAttempt => ({
  cause: null,
  unrecoverable: false,
  attempt: 1,
  maxAttempts: 3,
  backoffMs: 1_000,
  backoffMaxMs: 60_000,
  ...over,
});

describe('judgeFailure', () => {
  it("an abort decided elsewhere is not the handler's failure", () => {
    expect(judgeFailure(failed({ cause: 'cancelled' }))).toEqual({ kind: 'cancelled' });
    expect(judgeFailure(failed({ cause: 'lease_lost' }))).toEqual({ kind: 'stale' });
    expect(judgeFailure(failed({ cause: 'shutdown', attempt: 3 }))).toEqual({ kind: 'release' });
  });

  it('a timeout is a failure like any other', () => {
    expect(judgeFailure(failed({ cause: 'timeout' }), () => 0.5)).toEqual({ kind: 'retry', delayMs: 1_000 });
    expect(judgeFailure(failed({ cause: 'timeout', attempt: 3 }))).toEqual({ kind: 'dead' });
  });

  it('retries with exponential backoff, spread ±20 %, capped, until the last attempt', () => {
    expect(judgeFailure(failed({ attempt: 1 }), () => 0.5)).toEqual({ kind: 'retry', delayMs: 1_000 });
    expect(judgeFailure(failed({ attempt: 2 }), () => 0)).toEqual({ kind: 'retry', delayMs: 1_600 });
    expect(judgeFailure(failed({ attempt: 2 }), () => 1)).toEqual({ kind: 'retry', delayMs: 2_400 });
    expect(judgeFailure(failed({ attempt: 9, maxAttempts: 20 }), () => 0.5)).toEqual({
      kind: 'retry',
      delayMs: 60_000,
    });
    expect(judgeFailure(failed({ attempt: 3 }))).toEqual({ kind: 'dead' });
  });

  it('an unrecoverable error is dead at once', () => {
    expect(judgeFailure(failed({ unrecoverable: true, attempt: 1 }))).toEqual({ kind: 'dead' });
  });
});
