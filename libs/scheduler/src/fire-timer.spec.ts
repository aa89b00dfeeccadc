import { afterEach, describe, expect, it, vi } from 'vitest';
import { FireTimer } from './fire-timer.js';

describe('FireTimer', () => {
  afterEach(() => vi.useRealTimers());

  it('fires each item once, at its instant, in order, batching those due together', () => {
    vi.useFakeTimers({ now: 0 });
    const fired: string[][] = [];
    const timer = new FireTimer<{ id: string; fireAt: Date }>((due) => fired.push(due.map((d) => d.id)));
    timer.add([
      { id: 'c', fireAt: new Date(300) },
      { id: 'a', fireAt: new Date(100) },
      { id: 'b', fireAt: new Date(100) },
      { id: 'a', fireAt: new Date(100) },
    ]);
    expect(timer.size).toBe(3);
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired.map((batch) => batch.sort())).toEqual([['a', 'b']]);
    timer.add([{ id: 'early', fireAt: new Date(150) }]);
    vi.advanceTimersByTime(200);
    expect(fired.slice(1)).toEqual([['early'], ['c']]);
    expect(timer.size).toBe(0);
  });

  it('an item added again with another instant fires at the new one, once (a jitter lowered or raised by an edit)', () => {
    vi.useFakeTimers({ now: 0 });
    const fired: [string, number][] = [];
    const timer = new FireTimer<{ id: string; fireAt: Date }>((due) =>
      fired.push(...due.map((d): [string, number] => [d.id, Date.now()])),
    );
    timer.add([
      { id: 'lowered', fireAt: new Date(900) },
      { id: 'raised', fireAt: new Date(200) },
    ]);
    timer.add([
      { id: 'lowered', fireAt: new Date(300) },
      { id: 'raised', fireAt: new Date(600) },
    ]);
    expect(timer.size).toBe(2);
    vi.advanceTimersByTime(1_000);
    expect(fired).toEqual([
      ['lowered', 300],
      ['raised', 600],
    ]);
    expect(timer.size).toBe(0);
  });

  it('with a lead, hands each item over that long before its instant', () => {
    vi.useFakeTimers({ now: 0 });
    const fired: [string, number][] = [];
    const timer = new FireTimer<{ id: string; fireAt: Date }>(
      (due) => fired.push(...due.map((d): [string, number] => [d.id, Date.now()])),
      Date.now,
      50,
    );
    timer.add([
      { id: 'a', fireAt: new Date(1000) },
      { id: 'b', fireAt: new Date(1040) },
      { id: 'c', fireAt: new Date(1100) },
    ]);
    vi.advanceTimersByTime(949);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([['a', 950]]);
    vi.advanceTimersByTime(100);
    expect(fired).toEqual([
      ['a', 950],
      ['b', 990],
      ['c', 1050],
    ]);
  });

  it('fires overdue items at once and forgets everything on clear', () => {
    vi.useFakeTimers({ now: 1000 });
    const fired: string[] = [];
    const timer = new FireTimer<{ id: string; fireAt: Date }>((due) => fired.push(...due.map((d) => d.id)));
    timer.add([
      { id: 'late', fireAt: new Date(10) },
      { id: 'later', fireAt: new Date(5000) },
    ]);
    vi.advanceTimersByTime(0);
    expect(fired).toEqual(['late']);
    timer.clear();
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual(['late']);
  });
});
