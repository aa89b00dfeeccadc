import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { REDIS_URL } from '../support/env.js';
import { type AppProcess, sleep } from '../support/processes.js';
import { expectEverySlotSucceeded } from '../support/promises.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const SHARDS = 8;
const TTL_MS = 2_000;
const env = { SCHEDULER_SHARDS: String(SHARDS), LEADER_TTL_MS: String(TTL_MS) };

let cluster: Cluster | undefined;
let proxy: TcpProxy | undefined;

/** The shards each running scheduler says it leads (its health endpoint), by scheduler. */
async function ledShards(c: Cluster, skip: AppProcess[] = []): Promise<Map<AppProcess, number[]>> {
  const led = new Map<AppProcess, number[]>();
  for (const s of c.schedulers.filter((s) => s.alive && !skip.includes(s))) {
    // A scheduler just killed may not have been seen to exit yet: it leads nothing.
    const health = (await fetch(`${s.url}/health/ready`).then(
      (r) => r.json(),
      () => ({}),
    )) as { shards?: number[] };
    if (health.shards) led.set(s, health.shards);
  }
  return led;
}

/** Every shard led by exactly one scheduler (as the schedulers themselves see it). */
function covered(led: Map<AppProcess, number[]>): boolean {
  const all = [...led.values()].flat().sort((a, b) => a - b);
  return all.length === SHARDS && all.every((shard, i) => shard === i);
}

/** The shards whose newest epoch was taken by a running scheduler other than `dead` (Postgres' fencing rows). */
async function shardsLedByLive(c: Cluster, dead: AppProcess): Promise<number> {
  const { rows } = await c.db.query('SELECT leader_id FROM scheduler_state WHERE id <= $1', [SHARDS]);
  const live = new Set(c.schedulers.filter((s) => s.alive && s !== dead).map((s) => s.instanceId));
  return rows.filter((r) => live.has(r.leader_id)).length;
}

async function waitForSpread(c: Cluster, atLeast: number, timeoutMs: number): Promise<Map<AppProcess, number[]>> {
  return c.waitFor(
    async () => {
      const led = await ledShards(c);
      return covered(led) && [...led.values()].every((s) => s.length >= atLeast) ? led : null;
    },
    timeoutMs,
    `${SHARDS} shards spread, each scheduler leading at least ${atLeast}`,
  );
}

function describeMap(led: Map<AppProcess, number[]>): string {
  return [...led].map(([s, shards]) => `${s.label}:[${shards.join(',')}]`).join(' ');
}

/** Default policies: every slot of the tasks up to the last whole second succeeded once, with one webhook call. */
async function expectEverySlotRunOnce(c: Cluster, ids: string[], firstSlot: number, label: string): Promise<void> {
  const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
  await c.settle(lastSlot);
  const report = await c.report(ids, firstSlot, lastSlot);
  console.log(
    `${label}: ${report.expected} slots: ${JSON.stringify(report.byStatus)}, ${report.invoked} webhook calls`,
  );
  if (report.byStatus.succeeded !== report.expected) console.log(await c.explainSkips(ids));
  expectEverySlotSucceeded(report);
}

describe('fault: sharded scheduling, 3 schedulers and 8 shards', () => {
  afterEach(async () => {
    await cluster?.stop();
    await proxy?.close();
    cluster = proxy = undefined;
  });
  it('kill -9 the scheduler leading the most shards, twice: each of its shards is taken over after its last heartbeat, shards spread again, every slot runs once', async () => {
    cluster = await Cluster.start({ schedulers: 3, workers: 2, env });
    const c = cluster;
    const spread = await waitForSpread(c, 2, 20_000);
    console.log(`shards at start: ${describeMap(spread)}`);
    const { ids, firstSlot } = await c.createEverySecondTasks(24, {}, { webhook: { delay: 50 } });
    await sleep(2_000);

    const takeovers: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      const led = await ledShards(c);
      const [victim, its] = [...led].sort((a, b) => b[1].length - a[1].length)[0]!;
      const killedAt = Date.now();
      victim.signal('SIGKILL');
      await c.waitFor(
        async () => (await shardsLedByLive(c, victim)) === SHARDS,
        TTL_MS + 10_000,
        'every shard led by a live scheduler',
      );
      takeovers.push(Date.now() - killedAt);
      // Judged by order (how soon is the bench's and is printed): each of its shards is led under a
      // newer epoch by a live scheduler, taken after the killed one's last heartbeat — a shard's
      // leaderships, as its history records them, never overlap.
      for (const shard of its) {
        const { rows: history } = await c.db.query(
          `SELECT epoch, leader_id, acquired_at, heartbeat_at FROM shard_leadership WHERE shard = $1 ORDER BY epoch DESC LIMIT 2`,
          [shard],
        );
        const [now, before] = history;
        expect(before.leader_id, `shard ${shard}`).toBe(victim.instanceId);
        expect(now.leader_id, `shard ${shard}`).not.toBe(victim.instanceId);
        expect(now.acquired_at.getTime(), `shard ${shard}`).toBeGreaterThanOrEqual(before.heartbeat_at.getTime());
      }
      const after = await ledShards(c);
      expect(covered(after), describeMap(after)).toBe(true);
      console.log(
        `round ${round + 1}: killed ${victim.label} leading [${its.join(',')}]; every shard led again after ${takeovers.at(-1)} ms: ${describeMap(after)}`,
      );
      // The killed scheduler comes back: the shards spread over the three again.
      await c.add('scheduler', env);
      const again = await waitForSpread(c, 2, 10 * TTL_MS);
      console.log(`round ${round + 1}: after the restart ${describeMap(again)}`);
      await sleep(1_500);
    }
    console.log(`takeovers after kill -9 (LEADER_TTL_MS=${TTL_MS}): ${takeovers.join(', ')} ms`);

    await expectEverySlotRunOnce(c, ids, firstSlot, '2 kills');
  });

  it('a SIGSTOPped shard leader is fenced shard by shard: its shards are taken over, and once resumed it commits nothing under its old epochs', async () => {
    cluster = await Cluster.start({ schedulers: 3, workers: 2, env });
    const c = cluster;
    await waitForSpread(c, 2, 20_000);
    const { ids, firstSlot } = await c.createEverySecondTasks(24, {}, { webhook: { delay: 50 } });
    await sleep(2_000);
    const led = await ledShards(c);
    const [frozen, its] = [...led].sort((a, b) => b[1].length - a[1].length)[0]!;
    const { rows: before } = await c.db.query(
      'SELECT id - 1 AS shard, epoch FROM scheduler_state WHERE id <= $1 ORDER BY id',
      [SHARDS],
    );
    frozen.signal('SIGSTOP');
    // Its shards go to the other two, each under a newer epoch.
    await c.waitFor(
      async () => {
        const others = await ledShards(c, [frozen]);
        return covered(others) ? others : null;
      },
      TTL_MS + 10_000,
      "the frozen scheduler's shards taken over",
    );
    const { rows: during } = await c.db.query(
      'SELECT id - 1 AS shard, epoch, leader_id FROM scheduler_state WHERE id <= $1 ORDER BY id',
      [SHARDS],
    );
    for (const shard of its) {
      expect(BigInt(during[shard].epoch)).toBeGreaterThan(BigInt(before[shard].epoch));
      expect(during[shard].leader_id).not.toBe(frozen.instanceId);
    }

    frozen.signal('SIGCONT');
    // Resumed, it finds each of its locks gone (or its epoch fenced) and steps down, shard by shard.
    await c.waitFor(
      async () => (frozen.output.match(/stepped down/g) ?? []).length >= its.length,
      10_000,
      'the resumed scheduler to step down from each shard',
    );
    const { rows: resumed } = await c.db.query(
      'SELECT id - 1 AS shard, epoch FROM scheduler_state WHERE id <= $1 ORDER BY id',
      [SHARDS],
    );
    for (const shard of its) expect(BigInt(resumed[shard].epoch)).toBeGreaterThanOrEqual(BigInt(during[shard].epoch));
    // Then the shards spread over the three again.
    await waitForSpread(c, 2, 10 * TTL_MS);

    await expectEverySlotRunOnce(c, ids, firstSlot, `SIGSTOP of ${frozen.label} leading [${its.join(',')}]`);
  });

  it('a scheduler that cannot reach Redis gives up its shards; the other takes them all, and they spread again once it is back', async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, env });
    const c = cluster;
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(new URL(REDIS_URL).port || 6379) });
    const cut = await c.add('scheduler', { ...env, REDIS_URL: proxy.urlFor(REDIS_URL) });
    await waitForSpread(c, SHARDS / 2, 20_000);
    const { ids, firstSlot } = await c.createEverySecondTasks(16, {}, { webhook: { delay: 50 } });
    await sleep(2_000);

    const cutAt = Date.now();
    proxy.partition();
    const alone = await c.waitFor(
      async () => {
        const led = await ledShards(c);
        return led.get(cut)!.length === 0 && covered(led) ? led : null;
      },
      TTL_MS + 10_000,
      'the cut-off scheduler to give up its shards and the other to take them',
    );
    console.log(
      `Redis cut off → every shard with the other scheduler after ${Date.now() - cutAt} ms: ${describeMap(alone)}`,
    );
    expect(cut.output).toMatch(/stepped down/);

    proxy.heal();
    await waitForSpread(c, SHARDS / 2, 15 * TTL_MS);
    await expectEverySlotRunOnce(c, ids, firstSlot, 'Redis cut');
  });

  it('a scheduler started with another shard count refuses to start, with one line naming SCHEDULER_SHARDS', async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 0, env });
    const other = cluster.add('scheduler', { SCHEDULER_SHARDS: '4' });
    await expect(other).rejects.toThrow(/exited with 78/);
    const refused = cluster.schedulers.at(-1)!;
    const lines = refused.output
      .trim()
      .split('\n')
      .filter((l) => l.includes('SCHEDULER_SHARDS'));
    expect(lines).toEqual([
      "Invalid configuration: SCHEDULER_SHARDS is 4 but this cluster's tasks are split into 8 shard(s), fixed when its first scheduler started (stored in Postgres)",
    ]);
    const { rows } = await cluster.db.query('SELECT shards FROM scheduler_state WHERE id = 1');
    expect(rows[0].shards).toBe(SHARDS);
    // The running scheduler still leads every shard.
    expect(covered(await ledShards(cluster))).toBe(true);
  });
});
