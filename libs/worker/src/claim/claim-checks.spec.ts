import { describe, expect, it } from 'vitest';
import { waitBeforeSlotMs } from './claim-checks.js';

describe('waitBeforeSlotMs', () => {
  it('holds a job pushed early until its fire_at, and nothing else', () => {
    expect(waitBeforeSlotMs(1_050, 1_000, 50)).toBe(50);
    expect(waitBeforeSlotMs(1_000, 1_000, 50)).toBe(0);
    expect(waitBeforeSlotMs(900, 1_000, 50)).toBe(0);
    expect(waitBeforeSlotMs(undefined, 1_000, 50)).toBe(0);
  });

  it('never parks a job longer than the lead plus the tolerated clock skew', () => {
    expect(waitBeforeSlotMs(61_000, 1_000, 50)).toBe(300);
  });
});
