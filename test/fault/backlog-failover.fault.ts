import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';
import { insertTasks } from '../support/tasks.js';

const TASKS = 5;
const CATCHUP_MAX = 60;
const RATE = 20;

/**
 * The leader holds a backlog (catch-up runs released within CATCHUP_RATE) in memory only: killed
 * with most of it held, the next leader must find every held run in Postgres and release it. Each
 * catch-up runs exactly once, counted by handler invocations (the `http` handler's webhook).
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

  it('every held catch-up runs once after the failover, none lost, none twice', async () => {
    expect((await cluster.call('PUT', '/v1/namespaces/team-a', {})).status).toBe(201);
    const dayAgo = new Date(Math.floor((Date.now() - 86_400_000) / 60_000) * 60_000);
    await insertTasks(cluster.db, TASKS, {
      prefix: 'team-a/report',
      nextRunAt: dayAgo,
      cron: '* * * * *',
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      status: 'paused',
      createdAt: new Date(dayAgo.getTime() - 3_600_000),
    });
    for (let i = 1; i <= TASKS; i += 1)
      expect(
        (await cluster.call('POST', `/v1/tasks/report-${i}/resume?namespace=team-a`, { catchUp: 'all' })).status,
      ).toBe(200);
    const leader = await cluster.waitForLeader();
    await sleep(3_000);
    const { rows: before } = await cluster.db.query<{ started: number }>(
      `SELECT count(*) FILTER (WHERE started_at IS NOT NULL)::int AS started FROM task_execution WHERE trigger = 'catchup'`,
    );
    leader.signal('SIGKILL');
    // Most of the backlog was still held when the leader died (300 runs at 20 a second).
    expect(before[0]!.started).toBeLessThan((TASKS * CATCHUP_MAX) / 2);
    const rows = await cluster.waitFor(
      async () => {
        const { rows: all } = await cluster.db.query<{ id: string; status: string }>(
          `SELECT id, status FROM task_execution WHERE trigger = 'catchup'`,
        );
        return all.every((r) => r.status === 'succeeded') && all;
      },
      90_000,
      'every catch-up run to succeed after the failover',
    );
    expect(rows).toHaveLength(TASKS * CATCHUP_MAX);
    const runs = cluster.invocations.succeededBy();
    const counts = rows.map((r) => runs.get(r.id) ?? 0);
    expect(counts.filter((n) => n === 0)).toEqual([]);
    expect(counts.filter((n) => n > 1)).toEqual([]);
  }, 150_000);
});
