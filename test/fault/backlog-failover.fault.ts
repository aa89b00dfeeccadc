import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { insertTasks } from '../support/tasks.js';

const TASKS = 5;
const CATCHUP_MAX = 100;
const RATE = 20;
/** How long before the resume the tasks were paused: each has this many seconds of catch-ups. */
const PAUSED_S = 45;

/**
 * The leader holds a backlog (catch-up runs released within CATCHUP_RATE) in memory only, and parks
 * each task's on-time slots behind it as they fire: killed with most of it held, the next leader
 * must find every held run in Postgres and release it, and every parked slot must still be handed
 * its turn. Every slot runs exactly once, counted by handler invocations (the `http` handler's
 * webhook), each task's in slot order.
 */
describe('fault: the leader is kill -9ed while it holds a backlog', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({
      schedulers: 2,
      workers: 1,
      api: true,
      env: { CATCHUP_RATE: String(RATE), CATCHUP_MAX: String(CATCHUP_MAX) },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('every held catch-up and every slot parked behind them runs once after the failover, in slot order', async () => {
    expect((await cluster.call('PUT', '/v1/namespaces/team-a', {})).status).toBe(201);
    // Every-second tasks paused a while ago: their on-time slots fire while their catch-ups are held.
    const pausedAt = Math.floor((Date.now() - PAUSED_S * 1000) / 1000) * 1000;
    const ids = await insertTasks(cluster.db, TASKS, {
      prefix: 'team-a/report',
      nextRunAt: new Date(pausedAt),
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      status: 'paused',
      createdAt: new Date(pausedAt - 60_000),
    });
    for (let i = 1; i <= TASKS; i += 1)
      expect(
        (await cluster.call('POST', `/v1/tasks/report-${i}/resume?namespace=team-a`, { catchUp: 'all' })).status,
      ).toBe(200);
    const leader = await cluster.waitForLeader();
    await sleep(3_000);
    const { rows: before } = await cluster.db.query<{ started: number; catchUps: number }>(
      `SELECT count(*) FILTER (WHERE started_at IS NOT NULL)::int AS started, count(*)::int AS "catchUps" FROM task_execution WHERE trigger = 'catchup'`,
    );
    const parkedAtFire = Number(
      (await (await fetch(`${leader.url}/metrics`)).text()).match(/^punctual_parked_at_fire_total (\d+)/m)?.[1] ?? 0,
    );
    leader.signal('SIGKILL');
    const killedAt = Date.now();
    // Most of the backlog was still held when the leader died (over 200 runs at 20 a second), and
    // on-time slots had been parked behind it.
    expect(before[0]!.started).toBeLessThan(before[0]!.catchUps / 2);
    expect(parkedAtFire).toBeGreaterThan(0);
    const lastSlot = Math.floor((killedAt + 5_000) / 1000) * 1000;
    await cluster.waitFor(
      async () => {
        const { rows } = await cluster.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM task_execution WHERE task_id = ANY($1::uuid[]) AND scheduled_for <= $2 AND status = 'succeeded'`,
          [ids, new Date(lastSlot)],
        );
        return rows[0]!.n >= TASKS * ((lastSlot - pausedAt) / 1000 + 1);
      },
      90_000,
      'every slot to succeed after the failover',
    );
    const report = await cluster.report(ids, pausedAt, lastSlot);
    console.log(
      `${report.expected} slots, ${before[0]!.catchUps} of them catch-ups, ${parkedAtFire} parked at fire before the kill: ${JSON.stringify(report.byStatus)}, ${report.invoked} webhook calls`,
    );
    expectEveryPromiseKept(report);
    expect(report.byStatus).toEqual({ succeeded: report.expected });
    // Each task's runs began in slot order: the parked on-time slots after all of their catch-ups.
    const order = (by: string) =>
      cluster.db
        .query<{ id: string }>(
          `SELECT id FROM task_execution WHERE task_id = ANY($1::uuid[]) AND scheduled_for <= $2 ORDER BY task_id, ${by}`,
          [ids, new Date(lastSlot)],
        )
        .then((r) => r.rows.map((row) => row.id));
    expect(await order('started_at')).toEqual(await order('scheduled_for'));
  }, 150_000);
});
