import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type FlowCheck,
  type FlowPolicy,
  type FlowWrite,
  heldOnQuota,
  heldOutcomes,
  planBatch,
  QUOTA_PER_MS,
  quotaFlowKey,
  rateWindowMs,
} from './flow-plan.js';

const write = (fireMs: number, id = randomUUID()): FlowWrite => ({ id, seen: { fireAt: new Date(fireMs) } });
const check = (over: Partial<FlowCheck> = {}): FlowCheck => ({
  now_ms: 10_000,
  running: 0,
  first_held: null,
  held: 0,
  window_ms: [],
  ...over,
});
const concurrency = (limit: number): FlowPolicy => ({ concurrency: { key: 'api', limit }, rate: null });
const rate = (limit: number, perMs: number): FlowPolicy => ({ concurrency: null, rate: { key: 'mail', limit, perMs } });

describe('rateWindowMs', () => {
  it('counts a start 5 % longer than `per`, at most 50 ms longer', () => {
    expect(rateWindowMs(100)).toBe(105);
    expect(rateWindowMs(1_000)).toBe(1_050);
    expect(rateWindowMs(60_000)).toBe(60_050);
  });
});

describe('planBatch', () => {
  it('starts as many as there are permits, in (fire_at, id) order, and holds the rest', () => {
    const [a, b, c] = [write(3), write(1), write(2)];
    const plan = planBatch(check({ running: 1 }), [a!, b!, c!], concurrency(3));
    expect(plan.going.map((g) => g.w)).toEqual([b, c]);
    expect(plan.waiting.map((g) => g.w)).toEqual([a]);
  });

  it('orders equal fire_at by id, as Postgres orders uuids', () => {
    const low = write(5, '0fffffff-0000-4000-8000-000000000000');
    const high = write(5, 'Ffffffff-0000-4000-8000-000000000000');
    expect(planBatch(check(), [high, low], concurrency(1)).going.map((g) => g.w)).toEqual([low]);
  });

  it('holds every claim behind a run already held on the key, whatever the room', () => {
    const held = { fireMs: 2, id: randomUUID() };
    const [early, late] = [write(1), write(3)];
    const plan = planBatch(check({ first_held: held }), [late!, early!], concurrency(10));
    expect(plan.going.map((g) => g.w)).toEqual([early]);
    expect(plan.waiting.map((g) => g.w)).toEqual([late]);
  });

  it('counts the starts left in the rate window', () => {
    const writes = [write(1), write(2), write(3)];
    const plan = planBatch(check({ window_ms: [9_500, 9_600] }), writes, rate(3, 1_000));
    expect(plan.going).toHaveLength(1);
    expect(plan.waiting).toHaveLength(2);
  });
});

describe('heldOutcomes', () => {
  it('a run held for a permit waits for the word (no time); the runs ahead of it are counted', () => {
    const plan = planBatch(check({ running: 2, held: 4 }), [write(1), write(2)], concurrency(2));
    expect(heldOutcomes(check({ running: 2, held: 4 }), plan, [], concurrency(2), [])).toEqual([
      { kind: 'held', key: 'api', retryInMs: null, ahead: 4 },
      { kind: 'held', key: 'api', retryInMs: null, ahead: 5 },
    ]);
  });

  it('a run held on the rate window is told when the start `limit` back from its place leaves it', () => {
    // Two starts of a limit of 2 in the window (at 9.5 s and 9.6 s; now 10 s): the first held may
    // go when the 9.5 s start is 1.05 s old, the next when the 9.6 s one is.
    const seen = check({ window_ms: [9_500, 9_600] });
    const plan = planBatch(seen, [write(1), write(2)], rate(2, 1_000));
    const held = heldOutcomes(seen, plan, [], rate(2, 1_000), []);
    expect(held.map((h) => h.kind === 'held' && h.retryInMs)).toEqual([550, 650]);
  });
});

describe("a namespace's run quotas", () => {
  const quotaCheck = (over: Partial<NonNullable<FlowCheck['quota']>> = {}, outer: Partial<FlowCheck> = {}) =>
    check({ quota: { running: 0, first_held: null, held: 0, window_ms: [], ...over }, ...outer });
  const quota = (concurrency: number | null, perMinute: number | null, own: Partial<FlowPolicy> = {}): FlowPolicy => ({
    concurrency: null,
    rate: null,
    ...own,
    quota: { namespace: 'team-a', concurrency, perMinute },
  });

  it('starts as many as maxConcurrentRuns leaves room for, and holds the rest on the quota (woken when a run of the namespace ends)', () => {
    const writes = [write(1), write(2), write(3), write(4)];
    const seen = quotaCheck({ running: 1, held: 2 });
    const plan = planBatch(seen, writes, quota(3, null));
    expect(plan.going.map((g) => g.w)).toEqual(writes.slice(0, 2));
    expect(plan.waiting.map((_, j) => heldOnQuota(plan, plan.going.length + j))).toEqual([true, true]);
    expect(heldOutcomes(seen, plan, [], quota(3, null), [])).toEqual([
      undefined,
      undefined,
      { kind: 'held', key: quotaFlowKey('team-a'), retryInMs: null, ahead: 2 },
      { kind: 'held', key: quotaFlowKey('team-a'), retryInMs: null, ahead: 3 },
    ]);
  });

  it('a run held on the quota ahead goes first, whatever the room; a task key that is full holds on the key, not the quota', () => {
    const [early, late] = [write(1), write(3)];
    const behind = planBatch(
      quotaCheck({ first_held: { fireMs: 2, id: randomUUID() } }),
      [late!, early!],
      quota(10, null),
    );
    expect(behind.going.map((g) => g.w)).toEqual([early]);
    expect(heldOnQuota(behind, 1)).toBe(true);

    // A batch stopped by its task's key holds on the key, whatever their places, while the quota has room.
    const stoppedByKey = planBatch(quotaCheck(), [write(1), write(2), write(3), write(4), write(5)], {
      ...quota(3, null),
      concurrency: { key: 'api', limit: 1 },
    });
    expect(stoppedByKey.going).toHaveLength(1);
    expect(stoppedByKey.waiting.map((_, j) => heldOnQuota(stoppedByKey, 1 + j))).toEqual([false, false, false, false]);

    const own = quota(10, null, { concurrency: { key: 'api', limit: 1 } });
    const seen = quotaCheck({}, { running: 1 });
    const onKey = planBatch(seen, [write(1)], own);
    expect(onKey.going).toHaveLength(0);
    expect(heldOnQuota(onKey, 0)).toBe(false);
    expect(heldOutcomes(seen, onKey, [], own, [])).toEqual([{ kind: 'held', key: 'api', retryInMs: null, ahead: 0 }]);
  });

  it('counts maxRunsPerMinute over the last minute: a run over it asks again when a start leaves the window', () => {
    // 3 starts in the minute, at 5 s, 9 s and 9.9 s (now 10 s), of a quota of 4: one goes, the next
    // waits for the 5 s start to be a window old.
    const seen = quotaCheck({ window_ms: [5_000, 9_000, 9_900] });
    const plan = planBatch(seen, [write(1), write(2)], quota(null, 4));
    expect(plan.going).toHaveLength(1);
    const [, held] = heldOutcomes(seen, plan, [plan.going[0]!.id], quota(null, 4), []);
    expect(held).toEqual({
      kind: 'held',
      key: quotaFlowKey('team-a'),
      retryInMs: 5_000 + rateWindowMs(QUOTA_PER_MS) - 10_000,
      ahead: 0,
    });
  });

  it('a quota of 0 lets nothing start, and a run held on it waits for the quota to change', () => {
    const plan = planBatch(quotaCheck(), [write(1)], quota(null, 0));
    expect(plan.going).toHaveLength(0);
    expect(heldOutcomes(quotaCheck(), plan, [], quota(null, 0), [])[0]).toMatchObject({ retryInMs: null });
  });
});
