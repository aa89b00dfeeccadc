import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';

describe('fault: Postgres connections are killed mid-run', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 2, workers: 2 });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('planning and claiming resume; nothing is doubled or lost', async () => {
    const { ids, firstSlot } = await cluster.createEverySecondTasks(15);
    await sleep(2_000);
    let terminated = 0;
    for (let i = 0; i < 4; i += 1) {
      const { rows } = await cluster.db.query(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      terminated += rows[0].n;
      await sleep(2_000);
    }
    expect(terminated).toBeGreaterThan(4);
    await sleep(2_000);
    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot, 40_000);
    const report = await cluster.report(ids, firstSlot, lastSlot);
    console.log(
      `${terminated} connections killed: ${report.expected} slots: ${JSON.stringify(report.byStatus)}, max attempt ${report.maxAttempt}`,
    );
    expectEveryPromiseKept(report);
    // A run interrupted between claim and record is retried (attempt 2) — still one success. A run
    // whose outcome write was cut stays `running` until it is written again, and a slot due
    // meanwhile is judged against it: such a skip was checked above to have had its run in
    // progress at its time (wrongOverlapSkips). Nothing else but successes.
    expect(Object.keys(report.byStatus).filter((status) => status !== 'skipped:overlap')).toEqual(['succeeded']);
    expect(report.byStatus['skipped:overlap'] ?? 0).toBeLessThan(report.expected / 20);
    // Processes survive connection loss: each one answers ready (Postgres included) after the last kill.
    const apps = [...cluster.schedulers, ...cluster.workers];
    await Promise.all(apps.map((app) => app.ready(10_000)));
    expect(apps.every((app) => app.alive)).toBe(true);
  });
});
