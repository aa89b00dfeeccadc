import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

const CATCHUP_MAX = 3;

describe('fault: everything is down for longer than maxDelay', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, env: { CATCHUP_MAX: String(CATCHUP_MAX) } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('each misfire policy yields what DESIGN §4 says, with missed rows capped and counted', async () => {
    const policies = ['run_once', 'skip', 'run_all'] as const;
    const tasks: Record<string, string> = {};
    let firstSlot = 0;
    for (const misfire of policies) {
      const created = await cluster.createEverySecondTasks(1, { misfire, max_delay_ms: 2000, overlap: 'allow', name: `down-${misfire}` });
      tasks[misfire] = created.ids[0]!;
      firstSlot = Math.max(firstSlot, created.firstSlot);
    }
    await sleep(3_000);
    const stoppedAt = Date.now();
    await Promise.all([...cluster.schedulers, ...cluster.workers].map((app) => app.stop('SIGTERM')));
    await sleep(10_000);
    // Slots more than maxDelay older than this are late whatever the start-up takes.
    const restartedAt = Date.now();
    await cluster.add('scheduler');
    await cluster.add('worker');
    await sleep(4_000);
    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot);

    const report = await cluster.report(Object.values(tasks), firstSlot, lastSlot);
    expect(report.lost).toEqual([]);
    expect(report.unfinished).toEqual([]);
    expect(report.doubled).toEqual([]);

    const outcome: Record<string, unknown> = {};
    for (const misfire of policies) {
      const { rows } = await cluster.db.query(
        `SELECT scheduled_for, status, skip_reason, trigger FROM task_execution WHERE task_id = $1 ORDER BY scheduled_for`,
        [tasks[misfire]],
      );
      const { rows: t } = await cluster.db.query('SELECT missed_count::int AS n FROM task WHERE id = $1', [tasks[misfire]]);
      const catchup = rows.filter((r) => r.trigger === 'catchup');
      const missed = rows.filter((r) => r.status === 'missed');
      const downtimeSlots = rows.filter((r) => r.scheduled_for.getTime() > stoppedAt + 2_000 && r.scheduled_for.getTime() < restartedAt - 2_000);
      outcome[misfire] = { catchup: catchup.length, missedRows: missed.length, missedCount: t[0].n, statuses: count(rows) };

      // Rows are written for at most CATCHUP_MAX late slots; the rest only count.
      expect(missed.length).toBeLessThanOrEqual(CATCHUP_MAX);
      expect(t[0].n).toBeGreaterThanOrEqual(missed.length);
      // The outage left more late slots than CATCHUP_MAX, so the cap was exercised.
      expect(catchup.length + t[0].n).toBeGreaterThan(CATCHUP_MAX);
      // No late slot of the outage ran as an ordinary slot.
      expect(downtimeSlots.filter((r) => r.trigger === 'schedule' && r.status === 'succeeded')).toEqual([]);
      for (const run of catchup) expect(run.status).toBe('succeeded');
      if (misfire === 'run_once') {
        expect(catchup).toHaveLength(1);
        // …the most recent late slot.
        for (const m of missed) expect(m.scheduled_for.getTime()).toBeLessThan(catchup[0].scheduled_for.getTime());
      }
      if (misfire === 'skip') expect(catchup).toHaveLength(0);
      if (misfire === 'run_all') {
        expect(catchup).toHaveLength(CATCHUP_MAX);
        expect(missed).toHaveLength(0);
      }
    }
    console.log(`after ${Math.round((restartedAt - stoppedAt) / 1000)} s down: ${JSON.stringify(outcome)}`);
  });
});

function count(rows: { status: string; skip_reason: string | null }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) {
    const key = r.skip_reason ? `${r.status}:${r.skip_reason}` : r.status;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}
