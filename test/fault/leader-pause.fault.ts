import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEverySlotSucceeded } from '../support/promises.js';
import { sleep } from '../support/processes.js';

describe('fault: the leader is SIGSTOPped past its lease, then resumed', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 2, workers: 1 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('a new leader takes over; the old one commits nothing and steps down', async () => {
    const { ids, firstSlot } = await cluster.createEverySecondTasks(10);
    await sleep(2_000);
    const old = await cluster.waitForLeader();
    const { rows: before } = await cluster.db.query('SELECT epoch FROM scheduler_state');
    old.signal('SIGSTOP');
    // Its lease runs out: the other scheduler takes over.
    const successor = await cluster.waitFor(
      async () => {
        const leader = await cluster.leader();
        return leader !== old && leader;
      },
      20_000,
      'the other scheduler to lead',
    );
    const { rows: during } = await cluster.db.query('SELECT epoch FROM scheduler_state');
    expect(BigInt(during[0].epoch)).toBeGreaterThan(BigInt(before[0].epoch));

    old.signal('SIGCONT');
    // The resumed process notices it was superseded (lease unconfirmed or fenced) and steps down.
    await cluster.waitFor(async () => /stepped down/.test(old.output), 15_000, 'the resumed leader to step down');
    // Slots run on past the resume, over several of its tries for the lock (every LEADER_TTL_MS / 3):
    // it never leads again. Waited for as an event: the successor fired a slot two seconds on.
    const steppedDownAt = Date.now();
    await cluster.waitFor(
      () => cluster.firstFireAfter(steppedDownAt + 2_000),
      15_000,
      'a slot fired two seconds after the step-down',
    );
    expect(old.output.slice(old.output.lastIndexOf('stepped down'))).not.toMatch(/became leader/);
    const health = (await (await fetch(`${old.url}/health/ready`)).json()) as { leader: boolean };
    expect(health.leader).toBe(false);
    expect((await cluster.leader())?.label).toBe(successor.label);

    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    console.log(`SIGSTOP/SIGCONT: ${report.expected} slots: ${JSON.stringify(report.byStatus)}`);
    if (report.byStatus.succeeded !== report.expected) console.log(await cluster.explainSkips(ids));
    expectEverySlotSucceeded(report);
  });
});
