/**
 * The wait before attempt `attempt + 1` after attempt `attempt` failed: `base * 2^(attempt-1)`,
 * capped at `max`, then spread by ±20 % so that a burst of failures does not retry in lockstep.
 */
export function retryDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.max(0, Math.round(exponential * (0.8 + 0.4 * random())));
}
