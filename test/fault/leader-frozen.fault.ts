import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEverySlotSucceeded } from '../support/promises.js';
import { sleep } from '../support/processes.js';

const TTL_MS = 1_000;

describe('fault: the leader freezes inside its planning transaction', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 2, workers: 1, env: { LEADER_TTL_MS: String(TTL_MS) } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('holding the fencing row does not stall the cluster: a successor fires within the lease + 2 s; nothing runs twice', async () => {
    // Many tasks make each planning transaction long enough to catch it open.
    const { ids, firstSlot } = await cluster.createEverySecondTasks(200);
    await sleep(2_000);
    const old = await cluster.waitForLeader();

    // Freeze it the moment it is idle inside a transaction holding the fence (checked again after
    // the stop: the transaction may have ended just before it).
    let frozenAt = 0;
    const giveUpAt = Date.now() + 30_000;
    while (!frozenAt && Date.now() < giveUpAt) {
      if (!(await cluster.inFencedTransaction(old))) continue;
      old.signal('SIGSTOP');
      if (await cluster.inFencedTransaction(old)) frozenAt = Date.now();
      else old.signal('SIGCONT');
    }
    expect(frozenAt, 'caught the leader inside its planning transaction').toBeGreaterThan(0);

    const firstFire = await cluster.waitFor(() => cluster.firstFireAfter(frozenAt), 15_000, 'a fire after the freeze');
    const successor = await cluster.waitForLeader();
    expect(successor).not.toBe(old);
    console.log(
      `leader frozen in its planning transaction → successor's first fire: ${firstFire - frozenAt} ms (LEADER_TTL_MS=${TTL_MS})`,
    );
    expect(firstFire - frozenAt).toBeLessThan(TTL_MS + 2_000);
    // Postgres ended the frozen session: its transaction holds nothing any more.
    expect(await cluster.inFencedTransaction(old)).toBe(false);

    await sleep(2_000);
    old.signal('SIGCONT');
    await cluster.waitFor(async () => /stepped down/.test(old.output), 15_000, 'the resumed leader to step down');
    // Slots run on past the resume (what it was about to commit is among them): waited for as an
    // event, the successor firing a slot two seconds on.
    const steppedDownAt = Date.now();
    await cluster.waitFor(
      () => cluster.firstFireAfter(steppedDownAt + 2_000),
      15_000,
      'a slot fired two seconds after the step-down',
    );
    expect((await cluster.leader())?.label).toBe(successor.label);

    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot, 40_000);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    console.log(`frozen leader: ${report.expected} slots: ${JSON.stringify(report.byStatus)}`);
    expectEverySlotSucceeded(report);
  });
});
