/** Clock skew between a leader and a worker tolerated on top of the lead before a wait for the slot is cut short. */
const MAX_CLOCK_SKEW_MS = 250;

/**
 * How long a job pushed ahead of its slot waits before its claim: until `fireAt`, never longer
 * than the lead plus {@link MAX_CLOCK_SKEW_MS} (a worker clock far behind the leader's must not
 * park the job), and not at all for jobs without a `fireAt` (retries, re-enqueued jobs). `now` is
 * the cluster's clock (Postgres'), as `fireAt` is.
 */
export function waitBeforeSlotMs(fireAt: number | undefined, now: number, leadMs: number): number {
  if (fireAt === undefined) return 0;
  return Math.min(Math.max(0, fireAt - now), leadMs + MAX_CLOCK_SKEW_MS);
}
