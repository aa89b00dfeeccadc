import { describe, expect, it } from 'vitest';
import { phasedLookaheadMs, phaseOf } from './planning-phase.js';

const STRIDE = 5_000;
const LOOKAHEAD = 2_000;

describe('phasedLookaheadMs', () => {
  it("plans to the task's own phase grid, at least a lookahead and half a stride ahead, less than one and a half strides", () => {
    const id = '0000ea60-0000-4000-8000-000000000000'; // 60,000 % 5,000 = 0
    const other = '000003e8-0000-4000-8000-000000000000'; // 1,000
    expect(phaseOf(id, STRIDE)).toBe(0);
    expect(phaseOf(other, STRIDE)).toBe(1_000);
    // now 100,000: earliest 104,500 → the grid instant at or after it.
    expect(100_000 + phasedLookaheadMs(id, 100_000, LOOKAHEAD, STRIDE)).toBe(105_000);
    expect(100_000 + phasedLookaheadMs(other, 100_000, LOOKAHEAD, STRIDE)).toBe(106_000);
    for (let now = 100_000; now < 120_000; now += 137) {
      const ahead = phasedLookaheadMs(other, now, LOOKAHEAD, STRIDE);
      expect(ahead).toBeGreaterThanOrEqual(LOOKAHEAD + STRIDE / 2);
      expect(ahead).toBeLessThan(LOOKAHEAD + 1.5 * STRIDE);
      expect((now + ahead) % STRIDE).toBe(1_000);
    }
  });

  it('a task planned each time its cursor comes within the lookahead plans one stride each time, at its own phase', () => {
    const id = '5b830284-cb84-4da0-88b7-af03277c7087';
    let now = 1_000_000;
    let horizon = now + phasedLookaheadMs(id, now, LOOKAHEAD, STRIDE);
    for (let i = 0; i < 10; i += 1) {
      // Due again once the horizon (its cursor) is within the lookahead.
      now = horizon - LOOKAHEAD;
      const next = now + phasedLookaheadMs(id, now, LOOKAHEAD, STRIDE);
      expect(next - horizon).toBe(STRIDE);
      horizon = next;
    }
  });

  it('spreads many tasks over the stride', () => {
    const buckets = new Array(5).fill(0);
    for (let i = 0; i < 5_000; i += 1) {
      const id = `${(Math.imul(i + 1, 2_654_435_761) >>> 0).toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;
      buckets[Math.floor(phaseOf(id, STRIDE) / 1_000)] += 1;
    }
    for (const n of buckets) expect(n).toBeGreaterThan(800);
  });
});
