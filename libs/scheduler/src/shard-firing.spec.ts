import { Logger } from '@nestjs/common';
import type { ShardFence } from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Fireable } from './fire-timer.js';
import { RELEASE_INTERVAL_MS, ShardFiring } from './shard-firing.js';
import type { ShardFiringServices } from './shard-services.js';

const FENCE: ShardFence = { shard: 0, shards: 1, epoch: 1n };

const slot = (id: string, fireAtMs: number, more: Partial<Fireable> = {}): Fireable => ({
  id,
  fireAt: new Date(fireAtMs),
  handler: 'noop',
  trigger: 'schedule',
  taskId: `task-${id}`,
  namespace: 'default',
  ...more,
});

/** A firing over a dispatcher and turns that record what they are asked, on the fake timers' clock. */
function firing(options: { releasePerSecond?: number; fails?: boolean; parks?: (ids: string[]) => string[] } = {}) {
  const pushed: { ids: string[]; at: number }[] = [];
  const parkAsked: { ids: string[]; at: number }[] = [];
  let fence: ShardFence | null = FENCE;
  const services = {
    dispatcher: {
      push: (due: Fireable[]) => {
        if (options.fails) return Promise.reject(new Error('Redis is down'));
        pushed.push({ ids: due.map((e) => e.id), at: Date.now() });
        return Promise.resolve(due);
      },
    },
    turns: {
      parkAtFire: (ids: string[], at: number) => {
        parkAsked.push({ ids, at });
        return Promise.resolve(new Set(options.parks?.(ids) ?? ids));
      },
    },
    config: { fireLeadMs: 0 },
  } as unknown as ShardFiringServices;
  const f = new ShardFiring(
    services,
    { fence: () => fence, isLeader: () => fence !== null },
    { now: () => Date.now() },
    new Metrics(),
    new Logger('spec'),
    { shard: 0, releasePerSecond: options.releasePerSecond ?? 1_000 },
  );
  return { f, pushed, parkAsked, depose: () => (fence = null) };
}

describe('ShardFiring', () => {
  afterEach(() => vi.useRealTimers());

  it('pushes on-time slots at their fire_at, each once, however often a sweep finds them again', async () => {
    vi.useFakeTimers({ now: 10_000 });
    const { f, pushed } = firing();
    f.add([slot('a', 10_100), slot('b', 10_100), slot('c', 10_300)]);
    await vi.advanceTimersByTimeAsync(99);
    expect(pushed).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(pushed).toEqual([{ ids: ['a', 'b'], at: 10_100 }]);
    // A sweep finds a pushed row still `scheduled` (firing writes nothing): it is not taken again.
    f.add([slot('a', 10_100)]);
    expect(f.handled('a')).toBe(true);
    await vi.advanceTimersByTimeAsync(500);
    expect(pushed.map((p) => p.ids)).toEqual([['a', 'b'], ['c']]);
    // Past the relay's grace the pushes are forgotten: the relay checks those jobs.
    f.forgetPushedBefore(10_200);
    expect([f.handled('a'), f.handled('c')]).toEqual([false, true]);
  });

  it('keeps backlog runs and releases them at its rate, never in front of an on-time slot', async () => {
    vi.useFakeTimers({ now: 0 });
    const { f, pushed } = firing({ releasePerSecond: 2 });
    const backlog = Array.from({ length: 5 }, (_, i) => slot(`b${i}`, 0, { trigger: 'catchup', taskId: `t${i}` }));
    await f.fire([...backlog, slot('on-time', 0)]);
    expect(pushed[0]).toEqual({ ids: ['on-time'], at: 0 });
    expect(backlog.every((e) => f.inBacklog(e.id) || pushed.some((p) => p.ids.includes(e.id)))).toBe(true);
    for (let t = 0; t < 2_000; t += RELEASE_INTERVAL_MS) {
      await vi.advanceTimersByTimeAsync(RELEASE_INTERVAL_MS);
      f.releaseBacklog();
    }
    const released = pushed.slice(1).flatMap((p) => p.ids);
    expect(released.sort()).toEqual(['b0', 'b1', 'b2', 'b3', 'b4']);
    // The release at 0 stepped aside for the on-time slot fired then; then two a second (a
    // second's worth at once from a quiet start): the fifth a second and a half later.
    expect(pushed.slice(1).map((p) => p.at)).toEqual([100, 600, 1_100, 1_600]);
    expect(pushed.slice(1).map((p) => p.ids.length)).toEqual([2, 1, 1, 1]);
    expect(backlog.some((e) => f.inBacklog(e.id))).toBe(false);
  });

  it("parks an exclusive task's on-time slot behind its own backlog at its fire_at, and pushes what was not parked", async () => {
    vi.useFakeTimers({ now: 0 });
    const { f, pushed, parkAsked } = firing({
      releasePerSecond: 0.001,
      parks: (ids) => ids.filter((id) => id !== 'y'),
    });
    const behind = { taskId: 'busy', exclusive: true };
    await f.fire([slot('old', 0, { ...behind, trigger: 'catchup' })]);
    const firing2 = f.fire([slot('x', 50, behind), slot('y', 50, behind), slot('free', 50, { exclusive: true })]);
    await vi.advanceTimersByTimeAsync(60);
    await firing2;
    expect(pushed.map((p) => p.ids)).toEqual([['free'], ['y']]);
    // Asked at its fire_at (a few ms after), not at the lead before it.
    expect(parkAsked.map((p) => p.ids)).toEqual([['x', 'y']]);
    expect(parkAsked[0]!.at).toBeGreaterThanOrEqual(55);
    expect(f.handled('x')).toBe(true);
  });

  it('forgets a push that failed, so that the next sweep fires it again; a deposed leader fires nothing', async () => {
    vi.useFakeTimers({ now: 0 });
    const failing = firing({ fails: true });
    await failing.f.fire([slot('a', 0)]);
    expect(failing.f.handled('a')).toBe(false);
    const deposed = firing();
    deposed.f.add([slot('a', 100)]);
    deposed.depose();
    await vi.advanceTimersByTimeAsync(200);
    await deposed.f.fire([slot('b', 200)]);
    expect(deposed.pushed).toEqual([]);
  });
});
