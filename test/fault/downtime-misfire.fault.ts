import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_STRIDE_MS } from '../../libs/scheduler/src/index.js';
import { Cluster } from '../support/cluster.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';
import { insertTasks } from '../support/tasks.js';

const CATCHUP_MAX = 3;
const MAX_DELAY_MS = 5_000;
/** Slots of an every-second task planned before they are due: the lookahead (default 2 s) and up to one and a half of the planner's strides (its phase). */
const PLANNED_AHEAD = Math.ceil((2_000 + 1.5 * PLAN_STRIDE_MS) / 1000) + 1;

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
      // Default overlap policy (skip): the catch-up runs of run_all run one after another, none skipped.
      // maxDelay longer than a restart takes: the slots that turn late are the outage's alone.
      const created = await cluster.createEverySecondTasks(1, {
        misfire,
        max_delay_ms: MAX_DELAY_MS,
        name: `down-${misfire}`,
      });
      tasks[misfire] = created.ids[0]!;
      firstSlot = Math.max(firstSlot, created.firstSlot);
    }
    await sleep(3_000);
    const stoppedAt = Date.now();
    await Promise.all([...cluster.schedulers, ...cluster.workers].map((app) => app.stop('SIGTERM')));
    await sleep(13_000);
    // Slots more than maxDelay older than this are late whatever the start-up takes.
    const restartedAt = Date.now();
    // The worker first: once the leader fires, nothing it fires turns late waiting for a worker.
    await cluster.add('worker');
    await cluster.add('scheduler');
    await sleep(4_000);
    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot);

    const report = await cluster.report(Object.values(tasks), firstSlot, lastSlot);
    expectEveryPromiseKept(report);
    // Slots planned before the outage follow the misfire policy too: none ends skipped(late), and
    // none of the catch-up runs is skipped for overlapping its predecessor.
    expect(Object.keys(report.byStatus).filter((k) => k.startsWith('skipped'))).toEqual([]);

    const outcome: Record<string, unknown> = {};
    for (const misfire of policies) {
      const { rows } = await cluster.db.query(
        `SELECT scheduled_for, status, skip_reason, trigger, created_at FROM task_execution WHERE task_id = $1 ORDER BY scheduled_for`,
        [tasks[misfire]],
      );
      const { rows: t } = await cluster.db.query('SELECT missed_count::int AS n FROM task WHERE id = $1', [
        tasks[misfire],
      ]);
      // The slots already late when the new leader first planned are the outage's backlog. A slot
      // a little younger can still turn late while it waits its turn behind them (on a loaded
      // machine): a backlog of its own, judged by a later pass.
      const leaderBack = Math.min(...rows.map((r) => r.created_at.getTime()).filter((at) => at > restartedAt));
      const ofOutage = (r: { scheduled_for: Date }) => r.scheduled_for.getTime() < leaderBack - MAX_DELAY_MS;
      const catchup = rows.filter((r) => r.trigger === 'catchup' && ofOutage(r));
      const missed = rows.filter((r) => r.status === 'missed');
      const missedOfOutage = missed.filter(ofOutage);
      const downtimeSlots = rows.filter(
        (r) =>
          r.scheduled_for.getTime() > stoppedAt + 2_000 &&
          r.scheduled_for.getTime() < restartedAt - MAX_DELAY_MS - 1_000,
      );
      outcome[misfire] = {
        catchup: catchup.length,
        missedRows: missed.length,
        missedCount: t[0].n,
        statuses: count(rows),
      };

      // Rows are written for at most CATCHUP_MAX late slots; the rest only count. The slots planned
      // ahead before the outage had rows already.
      expect(missedOfOutage.length).toBeLessThanOrEqual(CATCHUP_MAX + PLANNED_AHEAD);
      expect(t[0].n).toBeGreaterThanOrEqual(missed.length);
      // The outage left more late slots than CATCHUP_MAX, so the cap was exercised.
      expect(catchup.length + t[0].n).toBeGreaterThan(CATCHUP_MAX);
      // No late slot of the outage ran as an ordinary slot.
      expect(downtimeSlots.filter((r) => r.trigger === 'schedule' && r.status === 'succeeded')).toEqual([]);
      // A catch-up runs — unless more slots turned late before it could start and the policy, deciding
      // again, chose a newer one (DESIGN §4: at most one pending catch-up for run_once, the most
      // recent CATCHUP_MAX for run_all): then it is missed, and a newer catch-up of the task ran.
      const ranCatchups = rows.filter((r) => r.trigger === 'catchup' && r.status === 'succeeded');
      for (const run of catchup) {
        expect(['succeeded', 'missed']).toContain(run.status);
        if (run.status === 'missed')
          expect(ranCatchups.some((r) => r.scheduled_for.getTime() > run.scheduled_for.getTime())).toBe(true);
      }
      if (misfire === 'run_once') {
        // One run for the outage: the most recent late slot. A slot within a second of turning late
        // when the leader came back may turn late while it waits (a loaded machine) and be judged
        // by a later pass, as its own backlog: then the older catch-up is missed (above) or had run.
        const ran = catchup.filter((r) => r.status === 'succeeded');
        // A catch-up ran: the outage's own, or — when it was missed for a newer one, judged by a
        // later pass — that newer one (itself younger than the outage's slots).
        expect(ranCatchups.length).toBeGreaterThanOrEqual(1);
        expect(
          ran.filter((r) => r.scheduled_for.getTime() < leaderBack - MAX_DELAY_MS - 1_000).length,
        ).toBeLessThanOrEqual(1);
        expect(catchup.length - ran.length).toBe(catchup.filter((r) => r.status === 'missed').length);
        // …the most recent late slot (itself missed only when a newer catch-up ran, above).
        for (const m of missedOfOutage.filter((r) => r.trigger !== 'catchup'))
          expect(m.scheduled_for.getTime()).toBeLessThan(catchup[0].scheduled_for.getTime());
      }
      if (misfire === 'skip') expect(catchup).toHaveLength(0);
      if (misfire === 'run_all') {
        // The most recent CATCHUP_MAX late slots became catch-ups; older ones planned before the outage
        // are missed. (A catch-up itself is missed only when a newer catch-up ran, checked above.)
        expect(catchup).toHaveLength(CATCHUP_MAX);
        for (const m of missedOfOutage.filter((r) => r.trigger !== 'catchup'))
          expect(m.scheduled_for.getTime()).toBeLessThan(catchup[0].scheduled_for.getTime());
      }
    }
    console.log(`after ${Math.round((restartedAt - stoppedAt) / 1000)} s down: ${JSON.stringify(outcome)}`);
  });

  it('a slot planned just before the outage, late when it ends, follows the misfire policy (not skipped as late)', async () => {
    // The next slot at least 3 s away, past the planner's lookahead while the tasks are set up.
    let slot = Math.ceil(Date.now() / 20_000) * 20_000;
    if (slot - Date.now() < 3_000) slot += 20_000;
    // Once a day at that second (UTC): however long the restart takes on a busy machine, no newer
    // slot turns late beside it and takes its place as the most recent one.
    const at = new Date(slot);
    const daily = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
    const tasks: Record<string, string> = {};
    for (const misfire of ['run_once', 'skip'] as const) {
      const [id] = await insertTasks(cluster.db, 1, {
        prefix: `planned-${misfire}`,
        nextRunAt: new Date(slot),
        cron: daily,
      });
      await cluster.db.query(`UPDATE task SET misfire = $1, max_delay_ms = 2000 WHERE id = $2`, [misfire, id]);
      tasks[misfire] = id!;
    }
    const planned = async () =>
      (
        await cluster.db.query(
          `SELECT status FROM task_execution WHERE task_id = ANY($1::uuid[]) AND scheduled_for = $2`,
          [Object.values(tasks), new Date(slot)],
        )
      ).rows;
    // Everything goes down once the slot is planned (within the lookahead, seconds before it fires).
    // The slot is up to 23 s away: the wait lasts until a little past it.
    await cluster.waitFor(
      async () => (await planned()).length === 2,
      slot - Date.now() + 5_000,
      'the slot to be planned',
    );
    await Promise.all([...cluster.schedulers, ...cluster.workers].map((app) => app.stop('SIGKILL')));
    expect((await planned()).map((r) => r.status)).toEqual(['scheduled', 'scheduled']);
    await sleep(slot + 3_000 - Date.now());
    await cluster.add('scheduler');
    await cluster.add('worker');
    const row = async (misfire: string) =>
      (
        await cluster.db.query(`SELECT status, trigger FROM task_execution WHERE task_id = $1 AND scheduled_for = $2`, [
          tasks[misfire],
          new Date(slot),
        ])
      ).rows[0];
    // run_once: the most recent late slot runs now, as a catch-up; skip: it is missed.
    await cluster.waitFor(
      async () => ['succeeded', 'missed'].includes((await row('run_once'))?.status),
      45_000,
      'the planned slot to be decided',
    );
    expect(await row('run_once')).toEqual({ status: 'succeeded', trigger: 'catchup' });
    await cluster.waitFor(
      async () => (await row('skip'))?.status === 'missed',
      45_000,
      'the planned slot to be missed',
    );
    const { rows } = await cluster.db.query('SELECT missed_count::int AS n FROM task WHERE id = $1', [tasks.skip]);
    expect(rows[0].n).toBe(1);
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
