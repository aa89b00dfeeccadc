import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';
import { expectEverySlotSucceeded } from '../support/promises.js';

const SKEWED_CLOCK = fileURLToPath(new URL('../support/skewed-clock.cjs', import.meta.url));
/** The environment of a process whose wall clock is `ms` off. */
const skewed = (ms: number) => ({ NODE_OPTIONS: `--require ${SKEWED_CLOCK}`, PUNCTUAL_TEST_CLOCK_SKEW_MS: String(ms) });

let cluster: Cluster | undefined;

async function runFor(c: Cluster, seconds: number, columns: Record<string, unknown> = {}) {
  await c.waitForLeader();
  const { ids, firstSlot } = await c.createEverySecondTasks(5, columns);
  await sleep(seconds * 1000);
  const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
  await c.settle(lastSlot);
  const { rows } = await c.db.query(
    `SELECT extract(epoch FROM started_at - fire_at) * 1000 AS early_ms FROM task_execution WHERE task_id = ANY($1::uuid[]) AND started_at IS NOT NULL`,
    [ids],
  );
  return { report: await c.report(ids, firstSlot, lastSlot), startLags: rows.map((r) => Number(r.early_ms)) };
}

/**
 * DESIGN §4, "One clock": Postgres' clock is the reference. A leader or a worker whose wall clock is
 * off by seconds still fires and starts each slot at its `fire_at` by Postgres' clock, and judges
 * lateness by it.
 */
describe('fault: a leader and a worker with skewed clocks', () => {
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });
  it('clocks 3 s ahead: nothing starts before its fire_at', async () => {
    cluster = await Cluster.start({ schedulers: 0, workers: 0 });
    const leader = await cluster.add('scheduler', skewed(3_000));
    await cluster.add('worker', skewed(3_000));
    const { report, startLags } = await runFor(cluster, 5);
    console.log(
      `clocks +3 s: start lag (started_at − fire_at, Postgres' clock) min ${Math.min(...startLags).toFixed(1)} ms, max ${Math.max(...startLags).toFixed(1)} ms`,
    );
    expectEverySlotSucceeded(report);
    // Measured to within a round trip on loopback.
    expect(Math.min(...startLags)).toBeGreaterThan(-5);
    const metrics = await (await fetch(`${leader.url}/metrics`)).text();
    const offset = Number(/^punctual_clock_offset_seconds\{role="scheduler"\} (-?[\d.e-]+)/m.exec(metrics)?.[1]);
    expect(offset).toBeCloseTo(-3, 1);
    expect(leader.output).toMatch(/more than 1 s off Postgres/);
  });

  it('a leader 4 s behind, tasks with maxDelay 2 s: none is skipped as late', async () => {
    cluster = await Cluster.start({ schedulers: 0, workers: 1 });
    await cluster.add('scheduler', skewed(-4_000));
    const { report } = await runFor(cluster, 5, { max_delay_ms: 2_000 });
    expectEverySlotSucceeded(report);
  });
});
