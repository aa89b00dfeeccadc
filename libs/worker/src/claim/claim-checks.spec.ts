import { describe, expect, it } from 'vitest';
import { holdBeforeSlotMs } from './claim-checks.js';

describe('holdBeforeSlotMs', () => {
  it('holds a job pushed early until its fire_at, and nothing else', () => {
    expect(holdBeforeSlotMs(1_050, 1_000, 50)).toBe(50);
    expect(holdBeforeSlotMs(1_000, 1_000, 50)).toBe(0);
    expect(holdBeforeSlotMs(900, 1_000, 50)).toBe(0);
    expect(holdBeforeSlotMs(undefined, 1_000, 50)).toBe(0);
  });

  it('never parks a job longer than the lead plus the tolerated clock skew', () => {
    expect(holdBeforeSlotMs(61_000, 1_000, 50)).toBe(300);
  });
});
