import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../support/isolation.js';
import { closeLayout, measureRuns, median, openLayout, type PartitionLayout } from '../support/partition-layouts.js';

const HISTORY_DAYS = 40;
const RUNS = 25;

/**
 * What partitioning costs the claim path, counted in buffers (DESIGN §3; the bound: 1.1×): the same
 * 40 days of history (200 tasks, a run every 36 minutes: 320,000 rows), in one partition (the table
 * as it was) and in 40 daily ones with the live horizon at today — the fenced claim and the success
 * (with its hand-over) of a run, prepared as the worker prepares them, over many runs. The bench's
 * history scenario times the same.
 */
describe('the claim path with 40 daily partitions of history against one table', () => {
  let single: PartitionLayout;
  let daily: PartitionLayout;
  const options = { days: HISTORY_DAYS, tasks: 200, everyMinutes: 36 };

  beforeAll(async () => {
    single = await openLayout(await createSandbox(), { ...options, daily: false });
    daily = await openLayout(await createSandbox(), { ...options, daily: true });
  }, 300_000);
  afterAll(async () => {
    await closeLayout(single);
    await closeLayout(daily);
  });

  it('reads no more than 1.1× the buffers of one table for a claim and for a success', async () => {
    const one = await measureRuns(single, 'a', RUNS, true);
    const many = await measureRuns(daily, 'a', RUNS, true);
    const buffers = (m: typeof one) => ({
      claim: median(m.claim.map((c) => c.buffers)),
      success: median(m.success.map((c) => c.buffers)),
    });
    const [a, b] = [buffers(one), buffers(many)];
    console.log(
      `buffers per run (median of ${RUNS}): one partition — claim ${a.claim}, success ${a.success}; ` +
        `${many.partitions} daily partitions — claim ${b.claim}, success ${b.success}`,
    );
    expect(one.partitions).toBe(1);
    expect(many.partitions).toBeGreaterThanOrEqual(HISTORY_DAYS);
    expect(b.claim).toBeLessThanOrEqual(a.claim * 1.1);
    expect(b.success).toBeLessThanOrEqual(a.success * 1.1);
    // Within ten minutes of midnight, tomorrow's partition is there too: said, not bounded.
    await daily.db.partitions.ensureCovered([new Date(Date.now() + 86_400_000)], 86_400_000);
    const ahead = buffers(await measureRuns(daily, 'b', RUNS, true));
    console.log(`…with tomorrow's partition made ahead: claim ${ahead.claim}, success ${ahead.success}`);
  });
});
