import { describe, expect, it } from 'vitest';
import { type Leadership, unledPeriods } from './scheduler-state.repository.js';

const s = (seconds: number) => new Date(Date.UTC(2026, 10, 28, 9, 0, seconds));
const led = (from: number, to: number, released = false, epoch = 1n): Leadership => ({
  shard: 0,
  epoch,
  leaderId: `l${epoch}`,
  from: s(from),
  to: s(to),
  released,
});

describe('unledPeriods', () => {
  it('is nothing while leaderships follow each other within a heartbeat of the last sign of life', () => {
    expect(unledPeriods([led(0, 10), led(12, 30, false, 2n)], s(0), s(30), 5_000)).toEqual([]);
  });

  it("is the time from a dead leader's last heartbeat (plus the grace) or a clean step-down to the next leader", () => {
    // Crashed: last seen at 10 s, taken over at 25 s; the grace (5 s) counts as led.
    expect(unledPeriods([led(0, 10), led(25, 40, false, 2n)], s(0), s(40), 5_000)).toEqual([
      { from: s(15), to: s(25) },
    ]);
    // Stepped down at 10 s: unled from then.
    expect(unledPeriods([led(0, 10, true), led(25, 40, false, 2n)], s(0), s(40), 5_000)).toEqual([
      { from: s(10), to: s(25) },
    ]);
  });

  it('covers the edges of the range: before the first leadership and after the last', () => {
    expect(unledPeriods([led(10, 20, true)], s(0), s(30), 5_000)).toEqual([
      { from: s(0), to: s(10) },
      { from: s(20), to: s(30) },
    ]);
    expect(unledPeriods([], s(0), s(30), 5_000)).toEqual([{ from: s(0), to: s(30) }]);
  });
});
