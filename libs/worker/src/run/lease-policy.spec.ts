import { describe, expect, it } from 'vitest';
import { leasePolicy } from './lease-policy.js';

describe('leasePolicy', () => {
  it('derives every timing from LEASE_MS', () => {
    expect(leasePolicy({ leaseMs: 30_000 })).toEqual({
      leaseMs: 30_000,
      renewAfterMs: 10_000,
      keeperTickMs: 500,
      abortMarginMs: 1_000,
      answerWithinMs: 5_000,
      minLeaseLeftMs: 15_000,
    });
  });

  it('keeps short leases workable: a tick of at least 50 ms, an answer of at least a second, a margin a tenth of the lease', () => {
    expect(leasePolicy({ leaseMs: 300 })).toEqual({
      leaseMs: 300,
      renewAfterMs: 100,
      keeperTickMs: 50,
      abortMarginMs: 30,
      answerWithinMs: 1_000,
      minLeaseLeftMs: 150,
    });
  });
});
