import { Redis } from 'ioredis';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('GET /v1/cluster', () => {
  const ctx = useApiSandbox();

  it('shows the leader and epoch, the live workers, the handlers due runs wait for in vain, queue depth and the published clock offsets', async () => {
    const redis = new Redis(ctx.sandbox.config().redisUrl);
    const prefix = ctx.sandbox.redisPrefix;
    try {
      await ctx.db.prisma.schedulerState.update({
        where: { id: 1 },
        data: {
          epoch: 7n,
          leaderId: 'sched-1:42',
          acquiredAt: new Date('2026-11-23T10:00:00Z'),
          heartbeatAt: new Date('2026-11-23T10:00:01Z'),
        },
      });
      await redis.set(
        `${prefix}:workers:host-a:1`,
        JSON.stringify({ handlers: ['http', 'noop'], concurrency: 50, at: '2026-11-23T10:00:00.000Z' }),
        'EX',
        30,
      );
      await redis.set(
        `${prefix}:clock:worker:host-a:1`,
        JSON.stringify({ offsetMs: -3.5, measuredAt: '2026-11-23T10:00:00.000Z' }),
      );
      await redis.set(
        `${prefix}:clock:scheduler:sched-1:42`,
        JSON.stringify({ offsetMs: 12, measuredAt: '2026-11-23T10:00:02.000Z' }),
      );
      await redis.set(`${prefix}:clock:api:broken`, 'not json');
      await ctx.api.call('POST', '/v1/tasks', {
        name: 'cluster-task',
        handler: 'noop',
        schedule: { cron: '0 9 * * *' },
      });
      const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'cluster-task' } });
      await ctx.db.historyAt(1000, 9000);
      await ctx.db.prisma.taskExecution.createMany({
        data: (['scheduled', 'scheduled', 'queued', 'succeeded'] as const).map((status, i) => ({
          id: executionIdFor(new Date(1000 * (i + 1))),
          taskId: task.id,
          taskName: task.name,
          scheduledFor: new Date(1000 * (i + 1)),
          fireAt: new Date(),
          taskVersion: 1,
          status,
        })),
      });
      // A retry due since 10:00 pinned (by an edit) to a handler no live worker offers: it waits for one.
      await ctx.db.prisma.taskExecution.create({
        data: {
          id: executionIdFor(new Date(9000)),
          taskId: task.id,
          taskName: task.name,
          scheduledFor: new Date(9000),
          fireAt: new Date(9000),
          taskVersion: 1,
          status: 'retrying',
          attempt: 1,
          nextAttemptAt: new Date('2026-11-23T10:00:00Z'),
          pinnedDefinition: { handler: 'send-email' },
        },
      });

      const viewer = (await ctx.api.call('POST', '/v1/api-keys', { name: 'cluster-viewer', role: 'viewer' })).body.key;
      const res = await ctx.api.call('GET', '/v1/cluster', undefined, {}, viewer);
      expect(res.status).toBe(200);
      expect(res.body.leader).toEqual({
        instance: 'sched-1:42',
        epoch: 7,
        acquiredAt: '2026-11-23T10:00:00.000Z',
        heartbeatAt: '2026-11-23T10:00:01.000Z',
      });
      // Unsharded: one shard, the same leader.
      expect(res.body.shards).toEqual([
        {
          shard: 0,
          leader: 'sched-1:42',
          epoch: 7,
          acquiredAt: '2026-11-23T10:00:00.000Z',
          heartbeatAt: '2026-11-23T10:00:01.000Z',
        },
      ]);
      expect(res.body.workers).toEqual([
        { instance: 'host-a:1', handlers: ['http', 'noop'], concurrency: 50, seenAt: '2026-11-23T10:00:00.000Z' },
      ]);
      expect(res.body.queue.executions).toEqual({ scheduled: 2, queued: 1, running: 0, retrying: 1 });
      // The noop runs due now have a worker (host-a offers noop); the pinned retry's handler has none.
      expect(res.body.waitingForWorker).toEqual([
        { handler: 'send-email', runs: 1, since: '2026-11-23T10:00:00.000Z' },
      ]);
      // A task's health says so too: its handler offered by no live worker, its runs wait for one.
      await ctx.api.call('POST', '/v1/tasks', {
        name: 'mail-task',
        handler: 'send-email',
        schedule: { cron: '0 9 * * *' },
      });
      expect((await ctx.api.call('GET', '/v1/tasks/mail-task')).body.health).toMatchObject({ waitingForWorker: true });
      expect((await ctx.api.call('GET', '/v1/tasks/cluster-task')).body.health).toMatchObject({
        waitingForWorker: false,
      });
      const listed = (await ctx.api.call('GET', '/v1/tasks')).body.items as {
        name: string;
        health: { waitingForWorker?: boolean };
      }[];
      expect(Object.fromEntries(listed.map((t) => [t.name, t.health.waitingForWorker]))).toMatchObject({
        'mail-task': true,
        'cluster-task': false,
      });
      expect(res.body.queue.jobs).toMatchObject({ waiting: 0, active: 0, delayed: 0 });
      // The API measures its own offset at start and publishes it too.
      const api = ctx.api.config.instanceId;
      expect(res.body.clockOffsets).toEqual([
        { role: 'api', instance: api, offsetMs: expect.any(Number), measuredAt: expect.any(String) },
        { role: 'scheduler', instance: 'sched-1:42', offsetMs: 12, measuredAt: '2026-11-23T10:00:02.000Z' },
        { role: 'worker', instance: 'host-a:1', offsetMs: -3.5, measuredAt: '2026-11-23T10:00:00.000Z' },
      ]);
      // On one machine the API's clock is Postgres'.
      expect(Math.abs(res.body.clockOffsets[0].offsetMs)).toBeLessThan(1_000);
    } finally {
      redis.disconnect();
    }
  });

  it("lists every shard with its leader and epoch; `leader` stays shard 0's", async () => {
    await ctx.db.prisma.schedulerState.update({
      where: { id: 1 },
      data: {
        shards: 4,
        epoch: 3n,
        leaderId: 'sched-a',
        acquiredAt: new Date('2026-11-25T10:00:00Z'),
        heartbeatAt: new Date('2026-11-25T10:00:02Z'),
      },
    });
    await ctx.db.prisma.schedulerState.createMany({
      data: [
        {
          id: 2,
          epoch: 5n,
          leaderId: 'sched-b',
          acquiredAt: new Date('2026-11-25T10:00:01Z'),
          heartbeatAt: new Date('2026-11-25T10:00:03Z'),
        },
        {
          id: 3,
          epoch: 1n,
          leaderId: 'sched-a',
          acquiredAt: new Date('2026-11-25T10:00:00Z'),
          heartbeatAt: new Date('2026-11-25T10:00:02Z'),
        },
        { id: 4 },
      ],
    });
    try {
      const res = await ctx.api.call('GET', '/v1/cluster');
      expect(res.status).toBe(200);
      expect(res.body.shards).toEqual([
        {
          shard: 0,
          leader: 'sched-a',
          epoch: 3,
          acquiredAt: '2026-11-25T10:00:00.000Z',
          heartbeatAt: '2026-11-25T10:00:02.000Z',
        },
        {
          shard: 1,
          leader: 'sched-b',
          epoch: 5,
          acquiredAt: '2026-11-25T10:00:01.000Z',
          heartbeatAt: '2026-11-25T10:00:03.000Z',
        },
        {
          shard: 2,
          leader: 'sched-a',
          epoch: 1,
          acquiredAt: '2026-11-25T10:00:00.000Z',
          heartbeatAt: '2026-11-25T10:00:02.000Z',
        },
        { shard: 3, leader: null, epoch: 0, acquiredAt: null, heartbeatAt: null },
      ]);
      expect(res.body.leader).toEqual({
        instance: 'sched-a',
        epoch: 3,
        acquiredAt: '2026-11-25T10:00:00.000Z',
        heartbeatAt: '2026-11-25T10:00:02.000Z',
      });
    } finally {
      await ctx.db.prisma.schedulerState.deleteMany({ where: { id: { gt: 1 } } });
      await ctx.db.prisma.schedulerState.update({ where: { id: 1 }, data: { shards: null } });
    }
  });

  it('answers an empty list of clock offsets when no process published one', async () => {
    const redis = new Redis(ctx.sandbox.config().redisUrl);
    const keys = await redis.keys(`${ctx.sandbox.redisPrefix}:clock:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    expect((await ctx.api.call('GET', '/v1/cluster')).body.clockOffsets).toEqual([]);
  });
  it("tells a scoped key nothing of other namespaces: their handlers, their runs waiting for a worker, their keys' names", async () => {
    const redis = new Redis(ctx.sandbox.config().redisUrl);
    try {
      for (const ns of ['scope-a', 'scope-b'])
        expect((await ctx.api.call('PUT', `/v1/namespaces/${ns}`, {})).status).toBe(201);
      await redis.set(
        `${ctx.sandbox.redisPrefix}:workers:host-s:1`,
        JSON.stringify({
          handlers: ['noop', 'b-billing-export', 'a-reports'],
          concurrency: 5,
          at: new Date().toISOString(),
        }),
        'EX',
        60,
      );
      // Each namespace's task runs a handler of its own; scope-b's also waits on one no worker offers.
      for (const [ns, name, handler] of [
        ['scope-a', 'reports', 'a-reports'],
        ['scope-b', 'billing', 'b-billing-export'],
        ['scope-b', 'payroll', 'b-payroll-secret'],
      ] as const)
        expect(
          (await ctx.api.call('POST', `/v1/tasks?namespace=${ns}`, { name, handler, schedule: { cron: '0 9 * * *' } }))
            .status,
        ).toBe(201);
      const payroll = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'scope-b/payroll' } });
      const due = new Date(Date.now() - 60_000);
      await ctx.db.prisma.taskExecution.create({
        data: {
          id: executionIdFor(due),
          taskId: payroll.id,
          taskName: payroll.name,
          scheduledFor: due,
          fireAt: due,
          taskVersion: 1,
        },
      });
      const key = async (name: string, role: string, namespaces?: string[]) =>
        (await ctx.api.call('POST', '/v1/api-keys', { name, role, ...(namespaces && { namespaces }) })).body
          .key as string;
      const viewerA = await key('viewer-of-a', 'viewer', ['scope-a']);
      const adminA = await key('admin-of-a', 'admin', ['scope-a']);
      const ops = await key('cluster-ops-secret-name', 'admin');

      const handlers = async (k?: string) =>
        ((await ctx.api.call('GET', '/v1/handlers', undefined, {}, k)).body.items as { name: string }[]).map(
          (h) => h.name,
        );
      // A handler only other namespaces' tasks name is theirs to know; one a task of scope-a names, or none does, is shown.
      const seen = await handlers(viewerA);
      expect(seen).toContain('a-reports');
      expect(seen).not.toContain('b-billing-export');
      expect(await handlers()).toEqual(expect.arrayContaining(['a-reports', 'b-billing-export', 'noop']));
      const scoped = (await ctx.api.call('GET', '/v1/cluster', undefined, {}, viewerA)).body;
      expect(JSON.stringify(scoped)).not.toMatch(/b-billing-export|b-payroll-secret/);
      const offered = scoped.workers.find((w: { instance: string }) => w.instance === 'host-s:1').handlers;
      expect(offered).toContain('a-reports');
      expect(offered).not.toContain('b-billing-export');
      const whole = (await ctx.api.call('GET', '/v1/cluster')).body;
      expect(whole.waitingForWorker.map((w: { handler: string }) => w.handler)).toContain('b-payroll-secret');

      // scope-a's task paused by a key of the whole cluster, then by scope-a's own admin: the scoped
      // viewer is told the name of its namespace's key only.
      expect((await ctx.api.call('POST', '/v1/tasks/reports/pause?namespace=scope-a', {}, {}, ops)).status).toBe(200);
      const range = `from=${new Date(Date.now()).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}`;
      const detail = async (k?: string) =>
        (await ctx.api.call('GET', `/v1/tasks/reports/timeline?namespace=scope-a&${range}`, undefined, {}, k)).body
          .items[0].detail as string;
      expect(await detail(viewerA)).toContain("by a key outside this key's namespaces");
      expect(await detail(viewerA)).not.toContain('cluster-ops-secret-name');
      expect(await detail()).toContain('by key cluster-ops-secret-name');
      expect((await ctx.api.call('POST', '/v1/tasks/reports/resume?namespace=scope-a', {}, {}, ops)).status).toBe(200);
      expect((await ctx.api.call('POST', '/v1/tasks/reports/pause?namespace=scope-a', {}, {}, adminA)).status).toBe(
        200,
      );
      expect(await detail(viewerA)).toContain('by key admin-of-a');
    } finally {
      redis.disconnect();
    }
  });
});
