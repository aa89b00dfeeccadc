import { describe, expect, it } from 'vitest';
import { offsetFromSamples, sampleClock } from './clock-offset.js';

describe('clock offset', () => {
  it('takes the midpoint of the quickest round trip', () => {
    const offset = offsetFromSamples([
      { sentAt: 1000, reference: 4100, receivedAt: 1200 }, // 200 ms round trip: a poor bound
      { sentAt: 2000, reference: 5010, receivedAt: 2020 }, // 20 ms: the reference read 5010 at ~2010
      { sentAt: 3000, reference: 6040, receivedAt: 3080 },
    ]);
    expect(offset).toBe(3000);
  });

  it('finds a reference clock behind the local one', async () => {
    let local = 10_000;
    const now = () => (local += 1);
    const samples = await sampleClock(async () => new Date(local - 2_500), 4, now);
    expect(offsetFromSamples(samples)).toBe(-2_500);
  });

  it('refuses to guess without a sample', () => {
    expect(() => offsetFromSamples([])).toThrow(/no clock samples/);
  });
});
