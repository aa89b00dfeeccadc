import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OverlapClaimer } from '../../libs/core/src/index.js';
import type { ExecutionStatus } from '../../libs/db/src/index.js';
import { Metrics } from '../../libs/observability/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

describe('claiming an execution (one fenced UPDATE)', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let taskId: string;
  let slot = 0;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    taskId = (await db.prisma.task.create({ data: { name: 'claims', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' } })).id;
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  async function execution(status: ExecutionStatus, extra: { leaseUntil?: Date; exclusive?: boolean } = {}) {
    const id = randomUUID();
    slot += 1;
    await db.prisma.taskExecution.create({
      data: { id, taskId, taskName: 'claims', scheduledFor: new Date(slot * 1000), fireAt: new Date(slot * 1000), taskVersion: 1, status, exclusive: false, ...extra },
    });
    return id;
  }

  it.each(['scheduled', 'queued', 'retrying'] as const)('claims from %s: running, attempt + 1, a fresh attempt_id and a lease', async (status) => {
    const id = await execution(status);
    const attemptId = randomUUID();
    const claim = await db.executions.claim(id, attemptId, 'w1', 30_000);
    expect(claim.kind).toBe('claimed');
    const row = await db.prisma.taskExecution.findUniqueOrThrow({ where: { id }, include: { events: true } });
    expect(row).toMatchObject({ status: 'running', attempt: 1, attemptId, workerId: 'w1' });
    expect(row.leaseUntil!.getTime() - row.startedAt!.getTime()).toBe(30_000);
    expect(row.events.map((e) => [e.fromStatus, e.toStatus])).toEqual([[status, 'running']]);
  });

  it.each(['succeeded', 'dead', 'skipped', 'missed', 'cancelled'] as const)('does not claim a finished (%s) execution', async (status) => {
    const id = await execution(status);
    expect((await db.executions.claim(id, randomUUID(), 'w1', 30_000)).kind).toBe('lost');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id } })).status).toBe(status);
  });

  it('does not claim a running execution whose lease holds, but takes over an expired one', async () => {
    const held = await execution('running', { leaseUntil: new Date(Date.now() + 60_000) });
    expect((await db.executions.claim(held, randomUUID(), 'w2', 30_000)).kind).toBe('lost');
    const expired = await execution('running', { leaseUntil: new Date(Date.now() - 1) });
    const claim = await db.executions.claim(expired, randomUUID(), 'w2', 30_000);
    expect(claim.kind === 'claimed' && claim.execution.workerId).toBe('w2');
  });

  it('lets exactly one of many concurrent claims win', async () => {
    const id = await execution('queued');
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => db.executions.claim(id, randomUUID(), `w${i}`, 30_000)));
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
  });

  it('fences the outcome by attempt_id: a stale attempt changes nothing', async () => {
    const id = await execution('queued', { leaseUntil: undefined });
    const first = randomUUID();
    await db.executions.claim(id, first, 'w1', 1);
    await new Promise((r) => setTimeout(r, 5));
    const second = randomUUID();
    expect((await db.executions.claim(id, second, 'w2', 30_000)).kind).toBe('claimed');
    expect(await db.executions.markSucceeded(id, first, { from: 'stale' })).toBe(false);
    expect(await db.executions.markFailed(id, first, 'boom', null)).toBe(false);
    expect(await db.executions.markSucceeded(id, second, { from: 'current' })).toBe(true);
    const row = await db.prisma.taskExecution.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ status: 'succeeded', attempt: 2, workerId: 'w2', result: { from: 'current' } });
  });

  it('reports overlap when the task already has an exclusive run in progress', async () => {
    await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'dead' } });
    const a = await execution('queued', { exclusive: true });
    const b = await execution('queued', { exclusive: true });
    expect((await db.executions.claim(a, randomUUID(), 'w1', 30_000)).kind).toBe('claimed');
    expect((await db.executions.claim(b, randomUUID(), 'w2', 30_000)).kind).toBe('overlap');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: b } })).status).toBe('queued');
  });

  it('claims many in one statement: each caller gets its own answer', async () => {
    await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'dead' } });
    const fresh = await execution('queued');
    const planned = await execution('scheduled');
    const done = await execution('succeeded');
    const raced = await execution('queued');
    const [winner, loser] = [randomUUID(), randomUUID()];
    const requests = [
      { id: fresh, attemptId: randomUUID(), workerId: 'w1' },
      { id: planned, attemptId: randomUUID(), workerId: 'w1' },
      { id: done, attemptId: randomUUID(), workerId: 'w1' },
      { id: raced, attemptId: winner, workerId: 'w1' },
      { id: raced, attemptId: loser, workerId: 'w2' },
    ];
    const results = await db.executions.claimMany(requests, 30_000);
    expect(results.map((r) => r.kind)).toEqual(['claimed', 'claimed', 'lost', 'claimed', 'lost']);
    const row = await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: raced }, include: { events: true } });
    expect(row).toMatchObject({ status: 'running', attempt: 1, attemptId: winner, workerId: 'w1' });
    expect(row.events).toHaveLength(1);
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: done } })).status).toBe('succeeded');
  });

  it('claims many with two exclusive runs of one task: the statement fails whole and changes nothing', async () => {
    await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'dead' } });
    const a = await execution('queued', { exclusive: true });
    const b = await execution('queued', { exclusive: true });
    await expect(db.executions.claimMany([a, b].map((id) => ({ id, attemptId: randomUUID(), workerId: 'w1' })), 30_000)).rejects.toThrow();
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: [a, b] } } });
    expect(rows.map((r) => r.status)).toEqual(['queued', 'queued']);
  });

  it('a worker claiming both at once (one shared statement, then one by one) runs the earlier and skips the other', async () => {
    const config = sandbox.config();
    const redis = new RedisService(config);
    const claimer = new OverlapClaimer(config, db.executions, db.tasks, redis, new Metrics());
    try {
      await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'dead' } });
      const a = await execution('queued', { exclusive: true });
      const b = await execution('queued', { exclusive: true });
      const [first, second] = await Promise.all([claimer.claim(a, randomUUID(), 'w1'), claimer.claim(b, randomUUID(), 'w1')]);
      expect([first.kind, second.kind]).toEqual(['claimed', 'overlap']);
      const row = await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: b } });
      expect([row.status, row.skipReason]).toEqual(['skipped', 'overlap']);
    } finally {
      await redis.onApplicationShutdown();
    }
  });

  it('records many successes in one statement, fenced per attempt', async () => {
    await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'dead' } });
    const ids = [await execution('queued'), await execution('queued')];
    const attempts = [randomUUID(), randomUUID()];
    await db.executions.claimMany(ids.map((id, i) => ({ id, attemptId: attempts[i]!, workerId: 'w1' })), 30_000);
    const ok = await db.executions.markSucceededMany([
      { id: ids[0]!, attemptId: attempts[0]!, result: { n: 1 } },
      { id: ids[1]!, attemptId: randomUUID(), result: { stale: true } },
    ]);
    expect(ok).toEqual([true, false]);
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: ids } }, include: { events: true } });
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(ids[0]!)).toMatchObject({ status: 'succeeded', result: { n: 1 } });
    expect(byId.get(ids[0]!)!.events.map((e) => e.toStatus).sort()).toEqual(['running', 'succeeded']);
    expect(byId.get(ids[1]!)).toMatchObject({ status: 'running', result: null });
  });

  it('records many successes as one statement: a result Postgres refuses fails the whole batch and records none', async () => {
    await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'dead' } });
    const ids = [await execution('queued'), await execution('queued')];
    const attempts = [randomUUID(), randomUUID()];
    await db.executions.claimMany(ids.map((id, i) => ({ id, attemptId: attempts[i]!, workerId: 'w1' })), 30_000);
    // jsonb refuses \u0000; the worker then records each success on its own (see Batcher).
    await expect(
      db.executions.markSucceededMany([
        { id: ids[0]!, attemptId: attempts[0]!, result: { ok: true } },
        { id: ids[1]!, attemptId: attempts[1]!, result: { text: 'nul \u0000 here' } },
      ]),
    ).rejects.toThrow();
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: ids } } });
    expect(rows.map((r) => r.status)).toEqual(['running', 'running']);
    expect(await db.executions.markSucceeded(ids[0]!, attempts[0]!, { ok: true })).toBe(true);
  });
});
