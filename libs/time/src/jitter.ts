import { createHash } from 'node:crypto';

/**
 * A deterministic offset in `[0, jitterMs)` from a hash of (task, slot), so that every planner
 * computes the same `fire_at` for a slot and the slot itself (`scheduled_for`) never moves.
 */
export function jitterOffset(taskKey: string, slot: Date, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  const digest = createHash('sha256').update(`${taskKey}|${slot.toISOString()}`).digest();
  return digest.readUInt32BE(0) % jitterMs;
}
