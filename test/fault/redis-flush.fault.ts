import { afterAll, beforeAll, describe, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEverySlotSucceeded } from '../support/promises.js';
import { sleep } from '../support/processes.js';
import { OwnRedis } from '../support/redis-server.js';

describe('fault: Redis loses everything mid-run', () => {
  let cluster: Cluster;
  let redis: OwnRedis;
  beforeAll(async () => {
    // A Redis server of this test's own: FLUSHALL and a restart touch nobody else.
    redis = await OwnRedis.start();
    cluster = await Cluster.start({ schedulers: 2, workers: 2, env: { REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    await cluster?.stop();
    await redis?.stop();
  });

  it('rebuilds the queue from Postgres after FLUSHALL and after a restart without persistence', async () => {
    const { ids, firstSlot } = await cluster.createEverySecondTasks(15);
    await sleep(3_000);
    const epoch = async () => BigInt((await cluster.db.query('SELECT epoch FROM scheduler_state')).rows[0].epoch);
    const before = await epoch();
    await redis.command('FLUSHALL');
    // The leader lock was wiped too: leadership is taken again, under a new epoch.
    const afterFlush = await cluster.waitFor(
      async () => {
        const now = await epoch();
        return now > before && now;
      },
      20_000,
      'leadership taken again after FLUSHALL',
    );
    // Slots run on the rebuilt queue.
    await sleep(2_000);

    const port = redis.port;
    await redis.stop();
    await sleep(1_500);
    redis = await OwnRedis.start(port);
    await cluster.waitFor(async () => (await epoch()) > afterFlush, 20_000, 'leadership taken again after the restart');
    // Slots run on the queue rebuilt after the restart.
    await sleep(2_000);

    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot, 40_000);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    console.log(`FLUSHALL + restart: ${report.expected} slots: ${JSON.stringify(report.byStatus)}`);
    expectEverySlotSucceeded(report);
  });
});
