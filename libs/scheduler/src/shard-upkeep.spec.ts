import { Logger } from '@nestjs/common';
import type { ShardFence } from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FencedOutError } from './errors.js';
import type { Fireable } from './fire-timer.js';
import { ShardFiring } from './shard-firing.js';
import type { ShardFiringServices, ShardLockServices, ShardUpkeepServices } from './shard-services.js';
import { ShardUpkeep } from './shard-upkeep.js';

const FENCE: ShardFence = { shard: 0, shards: 1, epoch: 7n };
const GRACE_MS = 10_000;

const row = (id: string, fireAtMs: number): Fireable => ({
  id,
  fireAt: new Date(fireAtMs),
  handler: 'noop',
  trigger: 'schedule',
});

/** An upkeep over repositories that answer as told and record what they are asked, on the fake timers' clock. */
function upkeep(options: { heartbeat?: boolean; due?: Fireable[] } = {}) {
  const asked = {
    sweeps: [] as { after: unknown; until: number }[],
    repairs: 0,
    observed: 0,
    resolved: [] as unknown[],
  };
  const errors: unknown[] = [];
  const pushed: string[] = [];
  const leading = { fence: () => FENCE, isLeader: () => true };
  const metrics = new Metrics();
  const firing = new ShardFiring(
    {
      dispatcher: { push: (due: Fireable[]) => (pushed.push(...due.map((e) => e.id)), Promise.resolve(due)) },
      turns: {},
      config: { fireLeadMs: 0 },
    } as unknown as ShardFiringServices,
    leading,
    { now: () => Date.now() },
    metrics,
    new Logger('spec'),
    { shard: 0, releasePerSecond: 100 },
  );
  const services = {
    executions: {
      listScheduledDue: (after: unknown, until: Date) => {
        asked.sweeps.push({ after, until: until.getTime() });
        return Promise.resolve(options.due ?? []);
      },
      listLateUnstarted: () =>
        Promise.resolve([
          {
            id: 'late-1',
            taskId: 'task-1',
            taskName: 't',
            scheduledFor: new Date(0),
            kind: 'late',
            misfire: 'skip',
            cursorLate: false,
            sloStartWithinMs: null,
          },
        ]),
      resolveLate: (_: ShardFence, catchup: unknown, missed: string[]) => {
        asked.resolved.push({ catchup, missed });
        return Promise.resolve({ caughtUp: [], missed: missed.length });
      },
    },
    relay: { repair: () => ((asked.repairs += 1), Promise.resolve()) },
    handlerQueues: { observe: () => ((asked.observed += 1), Promise.resolve()) },
    namespaces: { nearestQuota: () => Promise.resolve([]) },
    config: { relayGraceMs: GRACE_MS, lookaheadMs: 5_000, catchupMax: 10, catchupRate: 100 },
  } as unknown as ShardUpkeepServices;
  const lock = {
    state: { heartbeat: () => Promise.resolve(options.heartbeat ?? true) },
  } as unknown as ShardLockServices;
  const u = new ShardUpkeep(
    services,
    lock,
    firing,
    leading,
    (_, error) => errors.push(error),
    { now: () => Date.now(), date: () => new Date() },
    metrics,
    new Logger('spec'),
    0,
  );
  return { u, firing, asked, errors, pushed };
}

describe('ShardUpkeep', () => {
  afterEach(() => vi.useRealTimers());

  it("sweeps the relay's grace and the lookahead into the timer, all that is due when adopting, and never a row already pushed", async () => {
    vi.useFakeTimers({ now: 100_000 });
    const { u, firing, asked, pushed } = upkeep({ due: [row('a', 100_000), row('b', 101_000)] });
    await u.sweepScheduled();
    expect(asked.sweeps[0]).toEqual({ after: new Date(100_000 - GRACE_MS), until: 105_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pushed).toEqual(['a', 'b']);
    // Pushed and still `scheduled` (firing writes nothing): the next sweep finds them and leaves them.
    await u.sweepScheduled({ adopting: true });
    expect(asked.sweeps[1]!.after).toBeNull();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pushed).toEqual(['a', 'b']);
    expect(firing.handled('a')).toBe(true);
  });

  it('coalesces the sweeps the API asks for: one at a time, the next over every task named meanwhile', async () => {
    vi.useFakeTimers({ now: 0 });
    const { u, asked } = upkeep();
    u.sweepInserted(['t1']);
    u.sweepInserted(['t2']);
    u.sweepInserted(['t3']);
    u.sweepInserted([]);
    await vi.advanceTimersByTimeAsync(0);
    expect(asked.sweeps).toHaveLength(2);
  });

  it('a relay pass proves the lead first: a heartbeat refused is a fence-out, and nothing is repaired', async () => {
    vi.useFakeTimers({ now: 0 });
    const fenced = upkeep({ heartbeat: false });
    await fenced.u.repair();
    expect(fenced.errors).toEqual([new FencedOutError(FENCE.epoch)]);
    expect([fenced.asked.repairs, fenced.asked.resolved.length]).toEqual([0, 0]);

    const leading = upkeep();
    for (let pass = 0; pass < 4; pass += 1) await leading.u.repair();
    expect(leading.errors).toEqual([]);
    expect(leading.asked.repairs).toBe(4);
    // Late slots decided on every pass; shard 0 sets the queues' gauges every third pass.
    expect(leading.asked.resolved).toHaveLength(4);
    expect(leading.asked.resolved[0]).toEqual({ catchup: [], missed: ['late-1'] });
    expect(leading.asked.observed).toBe(2);
  });
});
