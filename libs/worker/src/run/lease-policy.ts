/**
 * Every timing of a worker's hold on its attempts, derived from one setting (`LEASE_MS`) in one
 * place. A lease is Postgres' `lease_until`; the reaper takes an execution over only once it has
 * passed, so each timing below keeps a worker's view of its lease inside Postgres'.
 */
export interface LeasePolicy {
  /** How long a claim or a renewal holds the attempt. */
  leaseMs: number;
  /** A lease is renewed once this much of it has gone (a third: two renewals may fail before it ends). */
  renewAfterMs: number;
  /** How often the lease keeper looks (renewals, cancels heard late): often enough that a cancel reaches a handler within a second. */
  keeperTickMs: number;
  /**
   * How long before its lease ends an attempt that could not renew it is aborted: the handler is no
   * longer running anywhere when the next attempt starts, with room for a timer that fires late.
   */
  abortMarginMs: number;
  /** How long a claim's statement may go unanswered: well within the lease a committed claim would hold. */
  answerWithinMs: number;
  /** A claim confirmed after its answer was lost runs only with at least this much of its lease left. */
  minLeaseLeftMs: number;
}

export function leasePolicy(config: { leaseMs: number }): LeasePolicy {
  const { leaseMs } = config;
  return {
    leaseMs,
    renewAfterMs: leaseMs / 3,
    keeperTickMs: Math.max(50, Math.min(500, Math.floor(leaseMs / 6))),
    abortMarginMs: Math.min(1_000, Math.floor(leaseMs / 10)),
    answerWithinMs: Math.max(1_000, Math.min(5_000, Math.floor(leaseMs / 3))),
    minLeaseLeftMs: leaseMs / 2,
  };
}
