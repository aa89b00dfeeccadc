import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';

describe('recording an outcome while Postgres drops the connection', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('a success whose write loses its connection is written again: the handler is not run a second time', async () => {
    const created = await cluster.call('POST', '/v1/tasks', {
      name: 'once',
      handler: 'http',
      payload: { url: cluster.invocations.url({ delay: 1_500 }) },
      schedule: { at: new Date(Date.now() + 1_500).toISOString() },
      policy: { retry: { attempts: 3, backoff: '100ms' } },
    });
    expect(created.status).toBe(201);
    const running = await cluster.waitFor(
      async () => (await cluster.executionsOf('once')).find((e) => e.status === 'running'),
      15_000,
      'the run',
    );

    // Hold the execution's row while the handler works: the success write queues behind the lock,
    // and is the statement whose session is killed.
    const holder = new pg.Client({ connectionString: cluster.sandbox.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM task_execution WHERE id = $1 FOR UPDATE', [running.id]);
      // Twice: a batched success falls back to a write of its own, and that one is killed too.
      for (const round of [1, 2]) {
        const killed = await cluster.waitFor(
          async () => {
            const { rows } = await cluster.db.query(
              `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%SET status = ''succeeded''%'`,
            );
            return rows[0].n > 0 ? rows[0].n : null;
          },
          10_000,
          `success write ${round} waiting on the row`,
        );
        expect(killed).toBe(1);
      }
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }

    const done = await cluster.waitFor(
      async () => (await cluster.executionsOf('once')).find((e) => ['succeeded', 'dead'].includes(e.status)),
      15_000,
      'the outcome',
    );
    expect(done).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect(cluster.invocations.succeededBy().get(running.id)).toBe(1);
    expect(cluster.invocations.calls.filter((c) => c.executionId === running.id)).toHaveLength(1);
  });
});
