import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector } from '../../libs/scheduler/src/index.js';
import { REDIS_URL } from '../support/env.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { sleep, waitFor } from '../support/processes.js';

describe('leader election on a Redis lock', () => {
  let sandbox: Sandbox;
  let redis: Redis;
  const electors: LeaderElector[] = [];

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
    const e = new LeaderElector(redis.duplicate(), {
      key, instanceId: id, ttlMs,
      onElected: () => events.push(`${id}:elected`),
      onDeposed: (reason) => events.push(`${id}:deposed:${reason}`),
    });
    electors.push(e);
    return e;
  }

  it('of several instances started together, exactly one leads, and keeps leading', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader`;
    const events: string[] = [];
    const all = ['a', 'b', 'c'].map((id) => elector(id, key, events));
    all.forEach((e) => e.start());
    await sleep(1500);
    expect(all.filter((e) => e.isLeader)).toHaveLength(1);
    expect(events.filter((e) => e.endsWith(':elected'))).toHaveLength(1);
    const leader = all.find((e) => e.isLeader)!;
    expect(await redis.get(key)).toBe(leader.token);
    expect(await redis.pttl(key)).toBeGreaterThan(0);
  });

  it('a follower takes the lock when the holder\'s lease ends, not a whole retry period later', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader:expiry`;
    // A holder that died: its lease runs out in 300 ms and nobody refreshes it.
    await redis.set(key, 'dead-holder', 'PX', 300);
    const events: string[] = [];
    // ttl 60 s: the follower's own retry period is 20 s.
    const follower = elector('f', key, events, 60_000);
    follower.start();
    await sleep(100);
    expect(follower.isLeader).toBe(false);
    await sleep(2_000);
    expect(follower.isLeader).toBe(true);
    expect(await redis.get(key)).toBe(follower.token);
  });

  it('hands over when the leader stops, and releases only its own lock', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader:handover`;
    const events: string[] = [];
    const a = elector('a', key, events);
    a.start();
    await sleep(100);
    expect(a.isLeader).toBe(true);
    const b = elector('b', key, events);
    b.start();
    await a.stop();
    await sleep(500);
    expect(b.isLeader).toBe(true);
    expect(await redis.get(key)).toBe(b.token);
  });

  it('steps down at once when its lock is taken away', async () => {
    const key = `${sandbox.redisPrefix}:scheduler:leader:stolen`;
    const events: string[] = [];
    const a = elector('a', key, events);
    a.start();
    // Leading first (its own connection may take a while to open on a busy machine).
    await waitFor(async () => a.isLeader, 5_000, 'a to lead');
    await redis.set(key, 'someone-else', 'PX', 5000);
    await sleep(400);
    expect(a.isLeader).toBe(false);
    expect(events).toContain('a:deposed:lock lost');
    expect(await redis.get(key)).toBe('someone-else');
  });
});
