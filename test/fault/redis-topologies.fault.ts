import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';
import { ClusterRedis, SentinelRedis } from '../support/redis-topologies.js';

/** Every-second tasks with the default policies, each calling the webhook (200 ms). */
const TASKS = 20;
const SHARDS = 2;
/** The LEADER_TTL_MS of the test clusters (Cluster.start's default). */
const LEADER_TTL_MS = 1_000;

let cluster: Cluster | undefined;
let topology: { stop(): Promise<void> } | undefined;

afterEach(async () => {
  await cluster?.stop();
  await topology?.stop();
  cluster = topology = undefined;
});

/** Each shard's leader lock, as the schedulers name it (`<prefix>:scheduler:leader:<k>`). */
const leaderKeys = (prefix: string) => Array.from({ length: SHARDS }, (_, k) => `${prefix}:scheduler:leader:${k}`);

/**
 * Lets the tasks run past the failover, then judges every slot from the first to a few seconds
 * after it, as the webhook counted them (DESIGN §1): none lost, none run twice.
 */
async function expectEverySlotOnce(
  c: Cluster,
  ids: string[],
  firstSlot: number,
): Promise<{ expected: number; byStatus: Record<string, number> }> {
  await sleep(5_000);
  const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
  await c.settle(lastSlot, 60_000);
  const report = await c.report(ids, firstSlot, lastSlot);
  expectEveryPromiseKept(report);
  expect(report.byStatus.succeeded).toBeGreaterThan(0);
  return report;
}

/**
 * After a promotion at `promotedAt`: waits until each shard's lock is on the new primary, held past
 * a whole lease (a lock copied from the old primary and never refreshed would have run out by
 * then), then until the tasks run again through it. Returns when every shard was led again.
 */
async function ledAndRunningAgain(
  c: Cluster,
  primary: { call(...args: [string, ...string[]]): Promise<unknown> },
  prefix: string,
  promotedAt: number,
): Promise<number> {
  await c.waitFor(
    async () => {
      if (Date.now() < promotedAt + LEADER_TTL_MS) return false;
      const values = await Promise.all(leaderKeys(prefix).map((key) => primary.call('GET', key).catch(() => null)));
      return values.every((v) => typeof v === 'string');
    },
    30_000,
    'every shard led on the new primary',
  );
  const ledAt = Date.now();
  const callsBefore = c.invocations.calls.length;
  await c.waitFor(
    async () => c.invocations.calls.length >= callsBefore + TASKS * 2,
    30_000,
    'runs through the new primary',
  );
  return ledAt;
}

describe('fault: Redis behind Sentinel (one primary, one replica, three sentinels)', () => {
  it(`kill -9 the primary while ${TASKS} every-second tasks run: the sentinels promote the replica, every role follows it, every shard is led again; every slot runs once`, async () => {
    const redis = await SentinelRedis.start();
    topology = redis;
    cluster = await Cluster.start({
      schedulers: 2,
      workers: 2,
      env: { ...redis.env, SCHEDULER_SHARDS: String(SHARDS) },
    });
    const c = cluster;
    const { ids, firstSlot } = await c.createEverySecondTasks(TASKS, {}, { webhook: { delay: 200 } });
    await c.waitFor(async () => c.invocations.calls.length >= TASKS * 2, 20_000, 'the tasks running');

    const old = await redis.primaryPort();
    const killedAt = Date.now();
    await redis.server(old).kill();
    const promoted = await c.waitFor(
      async () => {
        const port = await redis.primaryPort().catch(() => old);
        return port !== old ? port : null;
      },
      30_000,
      'the sentinels to promote the replica',
    );
    const promotedAt = Date.now();
    const ledAt = await ledAndRunningAgain(c, redis.server(promoted), c.sandbox.redisPrefix, promotedAt);

    const report = await expectEverySlotOnce(c, ids, firstSlot);
    console.log(
      `sentinel: primary kill -9 → replica promoted after ${promotedAt - killedAt} ms (down-after-milliseconds ${redis.downAfterMs}), ` +
        `every shard led after ${ledAt - killedAt} ms (LEADER_TTL_MS ${LEADER_TTL_MS}); ${report.expected} slots: ${JSON.stringify(report.byStatus)}`,
    );
  });
});

describe('fault: a Redis Cluster (three primaries, each with a replica)', () => {
  it(`every role on the cluster with every key in one slot; kill -9 the primary of that slot while ${TASKS} every-second tasks run: its replica takes over, every slot runs once`, async () => {
    const redis = await ClusterRedis.start();
    topology = redis;
    // The prefix holds a hash tag (the configuration refuses one without, with REDIS_CLUSTER_NODES).
    const sandboxed = await Cluster.start({ schedulers: 0, workers: 0 });
    cluster = sandboxed;
    const prefix = `{${sandboxed.sandbox.redisPrefix}}`;
    const env = { ...redis.env, REDIS_PREFIX: prefix, SCHEDULER_SHARDS: String(SHARDS) };
    await Promise.all([
      sandboxed.add('scheduler', env),
      sandboxed.add('scheduler', env),
      sandboxed.add('worker', env),
      sandboxed.add('worker', env),
    ]);
    const c = sandboxed;
    const { ids, firstSlot } = await c.createEverySecondTasks(TASKS, {}, { webhook: { delay: 200 } });
    await c.waitFor(async () => c.invocations.calls.length >= TASKS * 2, 20_000, 'the tasks running');

    // Every key written — queues, jobs, locks, the directory — is in the one slot of the hash tag.
    const home = await redis.primaryOf(prefix);
    const keys = (await home.call('KEYS', `${prefix}*`)) as string[];
    expect(keys.length).toBeGreaterThan(10);
    expect(keys.some((k) => k.includes(':executions.http:'))).toBe(true);
    for (const node of await redis.primaries()) {
      if (node !== home)
        expect(await node.call('KEYS', `*${sandboxed.sandbox.redisPrefix}*`), node.address).toEqual([]);
    }

    const killedAt = Date.now();
    await home.kill();
    const promoted = await c.waitFor(
      async () => {
        const now = await redis.primaryOf(prefix).catch(() => home);
        return now !== home && now.alive ? now : null;
      },
      30_000,
      'the replica to take over the slot',
    );
    const promotedAt = Date.now();
    const ledAt = await ledAndRunningAgain(c, promoted, prefix, promotedAt);

    const report = await expectEverySlotOnce(c, ids, firstSlot);
    console.log(
      `cluster: primary of the slot kill -9 → replica took over after ${promotedAt - killedAt} ms (cluster-node-timeout 1000), ` +
        `every shard led after ${ledAt - killedAt} ms (LEADER_TTL_MS ${LEADER_TTL_MS}); ${report.expected} slots: ${JSON.stringify(report.byStatus)}`,
    );
  });
});
