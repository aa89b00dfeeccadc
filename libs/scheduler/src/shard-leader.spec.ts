import { Metrics } from '@punctual/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Fireable } from './fire-timer.js';
import { ShardLeader } from './shard-leader.js';
import type { ShardServices } from './shard-services.js';

const TTL_MS = 3_000;

/**
 * A leader over a Redis lock that answers as told (`lockHeld`: the SET NX and the refresh succeed),
 * a state whose epoch bump may time out on a lock first, and a planner that plans `planned` once;
 * on the fake timers' clock, which is also the cluster's.
 */
function leader(options: { lockTimeouts?: number } = {}) {
  const calls = { bumps: 0, plans: 0, pushed: [] as string[], released: 0 };
  let lockHeld = true;
  let lockTimeouts = options.lockTimeouts ?? 0;
  const multi = {
    set: () => multi,
    pttl: () => multi,
    exec: () =>
      Promise.resolve(
        lockHeld
          ? [
              [null, 'OK'],
              [null, TTL_MS],
            ]
          : [
              [null, null],
              [null, TTL_MS],
            ],
      ),
  };
  const client = { multi: () => multi, eval: () => Promise.resolve(lockHeld ? 1 : 0) };
  const planned: Fireable[] = [{ id: 'slot', fireAt: new Date(5_000), handler: 'noop', trigger: 'schedule' }];
  const services = {
    clock: { now: () => Date.now(), date: () => new Date(), measure: () => Promise.resolve(0) },
    metrics: new Metrics(),
    lock: {
      redis: { client, key: (...parts: string[]) => parts.join(':') },
      state: {
        bumpEpoch: () => {
          calls.bumps += 1;
          if (lockTimeouts-- > 0) return Promise.reject(Object.assign(new Error('lock timeout'), { code: '55P03' }));
          return Promise.resolve(1n);
        },
        release: () => ((calls.released += 1), Promise.resolve()),
        heartbeat: () => Promise.resolve(true),
      },
      config: { instanceId: 'spec', leaderTtlMs: TTL_MS },
    },
    planning: {
      planner: { planDueSlots: () => Promise.resolve(calls.plans++ === 0 ? planned : []) },
      config: { planTickMs: 1_000 },
    },
    firing: {
      dispatcher: { push: (due: Fireable[]) => (calls.pushed.push(...due.map((e) => e.id)), Promise.resolve(due)) },
      turns: {},
      config: { fireLeadMs: 0 },
    },
    upkeep: {
      executions: { listScheduledDue: () => Promise.resolve([]), listLateUnstarted: () => Promise.resolve([]) },
      relay: { repair: () => Promise.resolve() },
      handlerQueues: { observe: () => Promise.resolve() },
      namespaces: { nearestQuota: () => Promise.resolve([]) },
      config: { relayGraceMs: 10_000, lookaheadMs: 10_000, catchupMax: 10, catchupRate: 100 },
    },
  } as unknown as ShardServices;
  const l = new ShardLeader(services, { shard: 0, shards: 1 });
  return { l, calls, loseLock: () => (lockHeld = false) };
}

describe('ShardLeader', () => {
  afterEach(() => vi.useRealTimers());

  it('elected, takes the epoch (waiting out a predecessor holding it), plans, and fires the first plan at its fire_at', async () => {
    vi.useFakeTimers({ now: 0 });
    const { l, calls } = leader({ lockTimeouts: 2 });
    l.start();
    await vi.advanceTimersByTimeAsync(10);
    expect([l.isLeader, l.hasLock, calls.bumps]).toEqual([true, true, 3]);
    expect(calls.pushed).toEqual([]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls.pushed).toEqual(['slot']);
    // Planned every tick while leading.
    expect(calls.plans).toBeGreaterThanOrEqual(5);
    await l.stop();
    expect([l.isLeader, calls.released]).toEqual([false, 1]);
  });

  it('steps down at once when the lock is lost: what it planned no longer fires, and planning stops', async () => {
    vi.useFakeTimers({ now: 0 });
    const { l, calls, loseLock } = leader();
    l.start();
    await vi.advanceTimersByTimeAsync(10);
    expect(l.isLeader).toBe(true);
    loseLock();
    // The next refresh (a third of the lease) finds the lock gone.
    await vi.advanceTimersByTimeAsync(TTL_MS / 3 + 10);
    expect([l.isLeader, l.hasLock]).toEqual([false, false]);
    const plans = calls.plans;
    await vi.advanceTimersByTimeAsync(6_000);
    expect(calls.pushed).toEqual([]);
    expect(calls.plans).toBe(plans);
    await l.stop();
  });
});
