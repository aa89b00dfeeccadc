import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LeaderElector } from '../../libs/scheduler/src/index.js';
import { REDIS_URL } from '../support/env.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { waitFor } from '../support/processes.js';

/** A condition polled every 20 ms: the elector's periods here are a few hundred ms. */
const until = (probe: () => boolean, what: string, timeoutMs = 5_000) =>
  waitFor(async () => probe(), timeoutMs, what, 20);

describe('leader election on a Redis lock', () => {
  let sandbox: Sandbox;
  let redis: Redis;
  const electors: LeaderElector[] = [];
  /** Per elector: its tries to take the lock (a MULTI each) and its refreshes (an EVAL each). */
  const calls = new Map<LeaderElector, { tries: () => number; refreshes: () => number }>();
  /** When each instance was elected (Date.now()). */
  const electedAt = new Map<string, number>();

  beforeAll(async () => {
    sandbox = await createSandbox();
    redis = new Redis(REDIS_URL);
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
  });
  afterAll(async () => {
    redis?.disconnect();
    await sandbox?.dispose();
  });

  function elector(id: string, key: string, events: string[], ttlMs = 600) {
    const connection = redis.duplicate();
    const tries = vi.spyOn(connection, 'multi');
    const refreshes = vi.spyOn(connection, 'eval');
    const e = new LeaderElector(connection, {
      key,
      instanceId: id,
      ttlMs,
      onElected: () => (events.push(`${id}:elected`), electedAt.set(id, Date.now())),
      onDeposed: (reason) => events.push(`${id}:deposed:${reason}`),
    });
    electors.push(e);
    calls.set(e, { tries: () => tries.mock.calls.length, refreshes: () => refreshes.mock.calls.length });
    return e;
  }
  const tries = (e: LeaderElector) => calls.get(e)!.tries();
  const refreshes = (e: LeaderElector) => calls.get(e)!.refreshes();

  it('of several instances started together, exactly one leads, and keeps leading', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader`;
    const events: string[] = [];
    const ids = ['a', 'b', 'c'];
    const all = ids.map((id) => elector(id, key, events));
    all.forEach((e) => e.start());
    const leader = await waitFor(async () => all.find((e) => e.isLeader), 5_000, 'a leader', 20);
    const followers = all.filter((e) => e !== leader);
    // Keeps leading: its refreshes carry it past its first lease (4 × ttl/3), and meanwhile each
    // follower tries twice more and fails — nobody else is elected, nobody deposed.
    const triedBefore = followers.map(tries);
    const refreshedBefore = refreshes(leader);
    await until(
      () => refreshes(leader) >= refreshedBefore + 4 && followers.every((f, i) => tries(f) >= triedBefore[i]! + 2),
      'refreshes and tries after the election',
    );
    expect(all.filter((e) => e.isLeader)).toEqual([leader]);
    expect(events).toEqual([`${ids[all.indexOf(leader)]}:elected`]);
    expect(await redis.get(key)).toBe(leader.token);
    expect(await redis.pttl(key)).toBeGreaterThan(0);
  });

  it("a follower takes the lock when the holder's lease ends, not a whole retry period later", async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader:expiry`;
    const events: string[] = [];
    // ttl 60 s: the follower's own retry period is 20 s.
    const follower = elector('f', key, events, 60_000);
    // A holder that died: its lease runs out in 300 ms and nobody refreshes it.
    const setAt = Date.now();
    await redis.set(key, 'dead-holder', 'PX', 300);
    follower.start();
    // Within a quarter of its retry period: it came back when the lease ended, not a period later.
    await until(() => follower.isLeader, 'the follower to lead');
    // Not before the dead holder's lease had ended (the lock is taken with NX).
    expect(electedAt.get('f')! - setAt).toBeGreaterThanOrEqual(300);
    expect(tries(follower)).toBeGreaterThanOrEqual(2);
    expect(await redis.get(key)).toBe(follower.token);
  });

  it('hands over when the leader stops, and releases only its own lock', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader:handover`;
    const events: string[] = [];
    // A lease of a minute: the follower can only lead within the wait below if the lock is released.
    const a = elector('a', key, events, 60_000);
    a.start();
    await until(() => a.isLeader, 'a to lead');
    const b = elector('b', key, events);
    b.start();
    await a.stop();
    expect(await redis.get(key)).not.toBe(a.token);
    await until(() => b.isLeader, 'b to lead');
    expect(await redis.get(key)).toBe(b.token);
    expect(events).toEqual(['a:elected', 'a:deposed:shutdown', 'b:elected']);
  });

  it('steps down at once when its lock is taken away', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader:stolen`;
    const events: string[] = [];
    const a = elector('a', key, events);
    a.start();
    // Leading first (its own connection may take a while to open on a busy machine).
    await until(() => a.isLeader, 'a to lead');
    await redis.set(key, 'someone-else', 'PX', 5000);
    await until(() => events.length > 1, 'a to step down');
    // At its next refresh (ttl/3), not when its watchdog finds the lease unconfirmed.
    expect(events).toEqual(['a:elected', 'a:deposed:lock lost']);
    expect(a.isLeader).toBe(false);
    expect(await redis.get(key)).toBe('someone-else');
  });
});
