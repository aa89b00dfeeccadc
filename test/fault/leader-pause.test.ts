import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEveryPromiseKept } from '../support/promises.js';
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
    await sleep(3_000);
    const successor = await cluster.waitForLeader();
    expect(successor).not.toBe(old);
    const { rows: during } = await cluster.db.query('SELECT epoch FROM scheduler_state');
    expect(BigInt(during[0].epoch)).toBeGreaterThan(BigInt(before[0].epoch));

    old.signal('SIGCONT');
    await sleep(3_000);
    // The resumed process noticed it was superseded (lease unconfirmed or fenced) and stopped.
    expect(old.output).toMatch(/stepped down/);
    expect(old.output.slice(old.output.lastIndexOf('stepped down'))).not.toMatch(/became leader/);
    const health = (await (await fetch(`${old.url}/health/ready`)).json()) as { leader: boolean };
    expect(health.leader).toBe(false);
    expect((await cluster.leader())?.label).toBe(successor.label);

    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    console.log(`SIGSTOP/SIGCONT: ${report.expected} slots: ${JSON.stringify(report.byStatus)}`);
    if (report.byStatus.succeeded !== report.expected) console.log(await cluster.explainSkips(ids));
    expectEveryPromiseKept(report);
    expect(report.byStatus).toEqual({ succeeded: report.expected });
  });
});
