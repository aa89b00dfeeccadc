import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useRepositorySandbox } from '../support/api-sandbox.js';
import { insertTasks } from '../support/tasks.js';

/**
 * A worker's lease renewals have a connection of their own: with every connection of its pool busy
 * (claim batches behind a slow database), a renewal still goes through at once — leases are not
 * lost, and runs not retried, for want of a connection.
 */
describe("a worker's lease connection", () => {
  const ctx = useRepositorySandbox({ DB_POOL_SIZE: '2' });

  it('renews while every connection of the pool is held by slow statements', async () => {
    const [taskId] = await insertTasks(ctx.client, 1, {
      prefix: 'leased',
      nextRunAt: new Date(Date.now() + 3_600_000),
    });
    const [id, attemptId] = [randomUUID(), randomUUID()];
    await ctx.client.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, task_version, status, trigger, attempt, attempt_id, started_at, lease_until)
       VALUES ($1, $2, 'leased-0', now(), now(), 1, 'running', 'manual', 1, $3, now(), now() + interval '5 s')`,
      [id, taskId, attemptId],
    );
    const order: string[] = [];
    // Both connections of the pool (DB_POOL_SIZE=2) busy for two seconds, and a third statement queued behind them.
    const slow = [1, 2, 3].map((n) =>
      ctx.db.prisma.pool.query('SELECT pg_sleep(2)').then(() => order.push(`slow ${n}`)),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ctx.db.prisma.pool.waitingCount).toBe(1);
    const renewed = ctx.db.attempts
      .renewLeases([{ id, attemptId }], 30_000)
      .then((owned) => (order.push('renewal'), owned));
    const owned = await renewed;
    expect(owned).toEqual(new Set([attemptId]));
    expect(await ctx.db.attempts.notOwned([{ id, attemptId }])).toEqual(new Map());
    await Promise.all(slow);
    // The renewal did not wait for any of them.
    expect(order[0]).toBe('renewal');
    const { rows } = await ctx.client.query(
      `SELECT lease_until > now() + interval '20 s' AS renewed FROM task_execution WHERE id = $1`,
      [id],
    );
    expect(rows[0].renewed).toBe(true);
  });
});
