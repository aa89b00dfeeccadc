import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEverySlotSucceeded } from '../support/promises.js';
import { sleep } from '../support/processes.js';

const KILLS = 4;

describe('fault: the leader is kill -9ed again and again', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    // A lease of 3 s holds several slots of every task back at each failover.
    cluster = await Cluster.start({ schedulers: 3, workers: 2, env: { LEADER_TTL_MS: '3000' } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('fails over every time; every slot of 20 every-second tasks (default policies) runs exactly once', async () => {
    const { ids, firstSlot } = await cluster.createEverySecondTasks(20, {}, { webhook: { delay: 100 } });
    await sleep(2_000);
    const failovers: number[] = [];
    for (let i = 0; i < KILLS; i += 1) {
      const leader = await cluster.waitForLeader();
      const killedAt = Date.now();
      leader.signal('SIGKILL');
      // Keep three schedulers: a replacement joins while the others race for the lock.
      const replacement = cluster.add('scheduler');
      let firstFire: number | null = null;
      while (firstFire === null && Date.now() - killedAt < 15_000) {
        await sleep(50);
        firstFire = await cluster.firstFireAfter(killedAt);
      }
      await replacement;
      expect(firstFire, `no slot fired within 15 s of kill ${i + 1}`).not.toBeNull();
      failovers.push(firstFire! - killedAt);
      await sleep(1_500);
    }
    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    console.log(
      `failover (kill -9 → next fired slot), ms: ${failovers.join(', ')}; ${report.expected} slots: ${JSON.stringify(report.byStatus)}`,
    );

    if (report.byStatus.succeeded !== report.expected) console.log(await cluster.explainSkips(ids));
    // Default policies (overlap=skip): the slots a failover held back run one after another, none
    // is skipped for them, each calls the webhook once.
    expectEverySlotSucceeded(report);
  });
});
