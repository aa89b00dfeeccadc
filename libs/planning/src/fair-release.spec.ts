import { describe, expect, it } from 'vitest';
import { FairRelease, OnTimeFirst, isBacklog } from './fair-release.js';

const runs = (namespace: string, n: number, from = 0, group = 'task') =>
  Array.from({ length: n }, (_, i) => ({ id: `${namespace}-${from + i}`, namespace, group }));

describe('FairRelease', () => {
  it('holds only backlog runs: catch-ups and backfills', () => {
    expect(['schedule', 'manual', 'catchup', 'backfill'].filter((t) => isBacklog(t as never))).toEqual([
      'catchup',
      'backfill',
    ]);
  });

  it('releases within the rate: a second’s worth at once, then as the bucket fills', () => {
    const gate = new FairRelease(10);
    gate.add(runs('a', 100));
    expect(gate.take(0)).toHaveLength(10);
    expect(gate.take(0)).toHaveLength(0);
    expect(gate.take(500)).toHaveLength(5);
    expect(gate.take(10_000)).toHaveLength(10); // a long quiet fills one second's worth, no more
    expect(gate.size).toBe(75);
  });

  it('takes turns across namespaces: one with 100,000 held does not delay another’s few', () => {
    const gate = new FairRelease(4);
    gate.add(runs('big', 100_000));
    gate.add(runs('small', 3));
    gate.add(runs('other', 1));
    const first = gate.take(0).map((r) => r.namespace);
    expect(first).toEqual(['big', 'other', 'small', 'big']);
    // Within three seconds every run of the small namespaces is out, while the big one still holds most of its own.
    const released = [...first, ...gate.take(1000).map((r) => r.namespace), ...gate.take(2000).map((r) => r.namespace)];
    expect(released.filter((n) => n === 'small')).toHaveLength(3);
    expect(gate.backlog()).toEqual(new Map([['big', 100_000 - (released.length - 4)]]));
  });

  it('takes turns across the tasks of a namespace too, each task’s oldest first', () => {
    const gate = new FairRelease(1_000);
    gate.add([...runs('a', 3, 0, 'x'), ...runs('a', 2, 10, 'y'), ...runs('b', 1, 0, 'z')]);
    expect(gate.backlog()).toEqual(
      new Map([
        ['a', 5],
        ['b', 1],
      ]),
    );
    // a (task x), b, a (task y), a (x), a (y), a (x): namespaces alternate while both have runs, tasks within a.
    expect(gate.take(0).map((r) => r.id)).toEqual(['a-0', 'b-0', 'a-10', 'a-1', 'a-11', 'a-2']);
  });

  it('tells whether a task has runs held, until its last is released', () => {
    const gate = new FairRelease(1);
    gate.add([...runs('a', 2, 0, 'x'), ...runs('b', 1, 0, 'x')]);
    expect([gate.hasTask('a', 'x'), gate.hasTask('b', 'x'), gate.hasTask('a', 'y'), gate.hasTask('c', 'x')]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(gate.take(0).map((r) => r.id)).toEqual(['a-0']);
    expect(gate.hasTask('a', 'x')).toBe(true);
    expect(gate.take(1_000).map((r) => r.id)).toEqual(['b-0']);
    expect(gate.take(2_000).map((r) => r.id)).toEqual(['a-1']);
    expect([gate.hasTask('a', 'x'), gate.hasTask('b', 'x'), gate.size]).toEqual([false, false, 0]);
  });

  it('releases each namespace’s runs oldest first, and a run added twice once', () => {
    const gate = new FairRelease(1_000);
    gate.add(runs('a', 3));
    gate.add(runs('a', 3)); // a sweep finding the same runs again
    gate.add(runs('b', 2));
    const out = gate.take(0).map((r) => r.id);
    expect(out).toHaveLength(5);
    expect(out.filter((id) => id.startsWith('a'))).toEqual(['a-0', 'a-1', 'a-2']);
    expect(out.filter((id) => id.startsWith('b'))).toEqual(['b-0', 'b-1']);
    // Interleaved: never two of one namespace while the other waits.
    expect(out).toEqual(['a-0', 'b-0', 'a-1', 'b-1', 'a-2']);
    gate.add(runs('c', 1));
    gate.clear();
    expect([gate.size, gate.take(1).length]).toEqual([0, 0]);
  });
});

describe('OnTimeFirst', () => {
  it('steps aside for an on-time slot due just ahead or just fired, never more than twice in a row', () => {
    const gate = new OnTimeFirst(150, 30, 2);
    // Nothing on time near: releases.
    expect(gate.yields(1_000, 2_000, 0)).toBe(false);
    // A slot fires 120 ms ahead: steps aside; one fired 20 ms ago: steps aside.
    expect(gate.yields(1_880, 2_000, 1_000)).toBe(true);
    expect(gate.yields(2_020, 3_000, 2_000)).toBe(true);
    expect(gate.yields(2_025, 3_000, 2_000)).toBe(false); // a third in a row goes
    // Past the window behind, and the next slot beyond the window ahead: releases.
    expect(gate.yields(2_100, 3_000, 2_000)).toBe(false);
  });

  it('holds the rate however crowded the schedule: every third release goes', () => {
    const gate = new OnTimeFirst(150, 30, 2);
    const went = Array.from({ length: 30 }, (_, i) => !gate.yields(i * 100, i * 100 + 50, i * 100 - 10));
    expect(went.filter(Boolean)).toHaveLength(10);
  });
});
