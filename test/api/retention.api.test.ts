import { describe, expect, it } from 'vitest';
import { Metrics } from '../../libs/metrics/src/index.js';
import { HistoryPruneRepository } from '../../libs/db/src/index.js';
import { HistoryKeeper } from '../../libs/scheduler/src/index.js';
import { useApiSandbox } from '../support/api-sandbox.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** What the API says of the history's retention (DESIGN §3 "History lifecycle"), and what it refuses. */
describe('retention through the API', () => {
  const ctx = useApiSandbox();

  it('a namespace keeps its own retention, shown with the one in force; the cluster view says what the cluster keeps', async () => {
    const put = await ctx.api.call('PUT', '/v1/namespaces/archive', { retention: { history: '60d' } });
    expect(put.status).toBe(201);
    expect(put.body.retention.history).toMatchObject({ own: '60d', inForce: '60d' });
    expect(put.body.retention.deadLetters).toMatchObject({ own: null, inForce: '90d' });
    const keptFrom = Date.parse(put.body.retention.history.keptFrom);
    expect(Math.abs(keptFrom - (Date.now() - 60 * DAY))).toBeLessThan(60_000);
    expect((await ctx.api.call('GET', '/v1/namespaces/default')).body.retention.history).toMatchObject({
      own: null,
      inForce: '30d',
    });

    const cluster = (await ctx.api.call('GET', '/v1/cluster')).body;
    expect(cluster.retention).toMatchObject({ history: '30d', deadLetters: '90d', audit: '365d' });
    expect(cluster.retention.partitions).toBeGreaterThanOrEqual(1);
    expect(cluster.retention.namespaces).toEqual([{ namespace: 'archive', history: '60d', deadLetters: '90d' }]);
  });

  it('refuses a retention under an hour, or shorter than a task of the namespace may still need its slot', async () => {
    const short = await ctx.api.call('PUT', '/v1/namespaces/brief', { retention: { history: '30m' } });
    expect(short.status).toBe(422);
    expect(JSON.stringify(short.body)).toContain('at least 1h');

    expect((await ctx.api.call('PUT', '/v1/namespaces/brief', {})).status).toBe(201);
    const task = {
      name: 'slow-to-start',
      handler: 'noop',
      schedule: { cron: '0 * * * *' },
      policy: { maxDelay: '6h' },
    };
    expect((await ctx.api.call('POST', '/v1/tasks?namespace=brief', task)).status).toBe(201);
    const tooShort = await ctx.api.call('PUT', '/v1/namespaces/brief', { retention: { history: '2h' } });
    expect(tooShort.status).toBe(422);
    expect(tooShort.body.error.code).toBe('retention_too_short');
    expect(tooShort.body.error.message).toContain('slow-to-start');
    expect((await ctx.api.call('GET', '/v1/namespaces/brief')).body.retention.history.own).toBeNull();

    // …and the other way round: a task whose maxDelay a namespace's retention would not cover.
    expect((await ctx.api.call('PUT', '/v1/namespaces/brief', { retention: { history: '8h' } })).status).toBe(200);
    const longer = await ctx.api.call('POST', '/v1/tasks?namespace=brief', {
      ...task,
      name: 'slower',
      policy: { maxDelay: '9h' },
    });
    expect(longer.status).toBe(422);
    expect(longer.body.error.code).toBe('retention_too_short');
    expect((await ctx.api.call('GET', '/v1/tasks/slower?namespace=brief')).status).toBe(404);
  });

  it('refuses a backfill from before the oldest slot kept, naming it', async () => {
    await ctx.api.call('POST', '/v1/tasks', { name: 'hourly', handler: 'noop', schedule: { cron: '0 * * * *' } });
    const from = new Date(Date.now() - 40 * DAY).toISOString();
    const to = new Date(Date.now() - 39 * DAY).toISOString();
    const refused = await ctx.api.call('POST', '/v1/tasks/hourly/backfill', { from, to });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('beyond_retention');
    expect(refused.body.error.message).toMatch(/oldest slot kept \(\d{4}-\d\d-\d\dT/);
    const ok = await ctx.api.call('POST', '/v1/tasks/hourly/backfill', {
      from: new Date(Date.now() - 2 * DAY).toISOString(),
      to: new Date(Date.now() - 2 * DAY + 3 * HOUR).toISOString(),
    });
    expect(ok.status).toBe(202);
    expect(ok.body.planned).toBe(3);
  });

  it('a slot past the retention is pruned on the timeline; health and the last run outlive the rows', async () => {
    const created = await ctx.api.call('POST', '/v1/tasks', {
      name: 'monthly',
      handler: 'noop',
      schedule: { cron: '0 9 1 * *' },
    });
    expect(created.status).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'monthly' } });
    // As if it had run long ago: created in the spring, its last run 40 days back.
    const ran = new Date(Date.now() - 40 * DAY);
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { createdAt: new Date(Date.now() - 200 * DAY) } });
    await ctx.db.prisma.$executeRaw`UPDATE audit_log SET at = now() - interval '200 days' WHERE target = 'monthly'`;
    await ctx.db.historyAt(ran);
    await ctx.db.prisma.$executeRaw`
      INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, started_at, finished_at)
      VALUES (punctual_execution_id(${ran.toISOString()}::timestamptz), ${task.id}::uuid, 'monthly', ${ran.toISOString()}::timestamptz,
              ${ran.toISOString()}::timestamptz, 'succeeded', 1, 1, ${ran.toISOString()}::timestamptz, ${ran.toISOString()}::timestamptz + interval '2 seconds')`;
    const keeper = new HistoryKeeper(
      ctx.sandbox.config(),
      ctx.db.partitions,
      ctx.db.horizon,
      new HistoryPruneRepository(ctx.db.prisma),
      new Metrics(),
    );
    await keeper.pass(new Date());
    expect(await ctx.db.prisma.taskExecution.count({ where: { taskId: task.id } })).toBe(0);

    const shown = (await ctx.api.call('GET', '/v1/tasks/monthly')).body;
    expect(shown.health).toMatchObject({
      lastSuccessAt: new Date(ran.getTime() + 2000).toISOString(),
      consecutiveFailures: 0,
    });
    expect(shown.health.state).not.toBe('never_ran');
    expect(shown.lastExecution).toMatchObject({ scheduledFor: ran.toISOString(), status: 'succeeded' });

    const from = new Date(Date.now() - 70 * DAY).toISOString();
    const to = new Date(Date.now() - 40 * DAY).toISOString();
    const timeline = await ctx.api.call('GET', `/v1/tasks/monthly/timeline?from=${from}&to=${to}`);
    expect(timeline.status).toBe(200);
    expect(timeline.body.items.length).toBeGreaterThan(0);
    for (const item of timeline.body.items) {
      expect(item).toMatchObject({ outcome: 'pruned', reason: 'retention' });
      expect(item.detail).toContain('retention (30d)');
    }
  });
});
