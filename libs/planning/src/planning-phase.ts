/**
 * How far ahead a recurring task is planned when it comes due for planning (its cursor within the
 * lookahead): to the first instant of its own phase grid at least `lookaheadMs + strideMs / 2`
 * ahead — `stride`-spaced instants offset by a stable hash of the task's id. Each planning then
 * covers one stride of the task's slots, and the tasks of a cluster come due for planning spread
 * over the stride rather than together: a thousand tasks created at once do not make a planning
 * burst of five thousand rows on one instant every stride, but a fifth of it every second.
 * Returns the lookahead to plan with (ms from `now`), between `lookaheadMs + strideMs / 2` and
 * `lookaheadMs + 1.5 × strideMs`.
 */
export function phasedLookaheadMs(taskId: string, now: number, lookaheadMs: number, strideMs: number): number {
  const phase = phaseOf(taskId, strideMs);
  const earliest = now + lookaheadMs + strideMs / 2;
  const horizon = Math.ceil((earliest - phase) / strideMs) * strideMs + phase;
  return horizon - now;
}

/** A task's offset in `[0, strideMs)`, from its id (a uuid: its first 32 bits are uniform). */
export function phaseOf(taskId: string, strideMs: number): number {
  const bits = Number.parseInt(taskId.replace(/-/g, '').slice(0, 8), 16);
  return Number.isFinite(bits) ? bits % strideMs : 0;
}
