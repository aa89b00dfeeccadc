import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OverlapClaimer } from '../../libs/worker/src/index.js';
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
  /** Slots within maxDelay (1 h): none is late. */
  const BASE = Date.now() - 600_000;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    taskId = (await db.prisma.task.create({ data: { name: 'claims', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' } })).id;
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  /** An execution of the task; slots are one second apart in the last ten minutes, in creation order, unless `at` is given. */
  async function execution(
    status: ExecutionStatus,
    extra: { leaseUntil?: Date; exclusive?: boolean; at?: number; fireAt?: number; attempt?: number; queuedAt?: Date; heldAt?: Date; trigger?: 'catchup' } = {},
  ) {
    const id = randomUUID();
    slot += 1;
    const { at, fireAt, ...rest } = extra;
    const scheduledFor = new Date(at ?? BASE + slot * 1000);
    await db.prisma.taskExecution.create({
      data: { id, taskId, taskName: 'claims', scheduledFor, fireAt: new Date(fireAt ?? scheduledFor.getTime()), taskVersion: 1, status, exclusive: false, ...rest },
    });
    return id;
  }

  /** Earlier tests leave runs in progress and slots not started: end them, as if done. */
  const endRunning = () => db.prisma.taskExecution.updateMany({ where: { taskId, status: { in: ['running', 'queued', 'scheduled'] } }, data: { status: 'dead' } });

  it.each(['scheduled', 'queued', 'retrying'] as const)('claims from %s: running, attempt + 1, a fresh attempt_id and a lease', async (status) => {
    const queuedAt = status === 'queued' ? new Date(Date.now() - 100) : undefined;
    const id = await execution(status, { queuedAt });
    const attemptId = randomUUID();
    const claim = await db.attempts.claim({ id: id, attemptId: attemptId, workerId: 'w1' }, 30_000);
    expect(claim.kind).toBe('claimed');
    const row = (await db.queries.findById(id))!;
    expect(row).toMatchObject({ status: 'running', attempt: 1, attemptId, workerId: 'w1' });
    expect(row.leaseUntil!.getTime() - row.startedAt!.getTime()).toBe(30_000);
    const history = row.events.map((e) => [e.fromStatus, e.toStatus]);
    // A claim from `scheduled` (before the leader marked the row) records the release itself.
    expect(history).toEqual(status === 'retrying' ? [['retrying', 'running']] : [['scheduled', 'queued'], ['queued', 'running']]);
  });

  it.each(['succeeded', 'dead', 'skipped', 'missed', 'cancelled'] as const)('does not claim a finished (%s) execution', async (status) => {
    const id = await execution(status);
    expect((await db.attempts.claim({ id: id, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('lost');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id } })).status).toBe(status);
  });

  it('does not claim a running execution whose lease holds, but takes over an expired one', async () => {
    const held = await execution('running', { leaseUntil: new Date(Date.now() + 60_000) });
    expect((await db.attempts.claim({ id: held, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('lost');
    const expired = await execution('running', { leaseUntil: new Date(Date.now() - 1) });
    const claim = await db.attempts.claim({ id: expired, attemptId: randomUUID(), workerId: 'w2' }, 30_000);
    expect(claim.kind === 'claimed' && claim.execution.workerId).toBe('w2');
  });

  it('lets exactly one of many concurrent claims win', async () => {
    const id = await execution('queued');
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => db.attempts.claim({ id: id, attemptId: randomUUID(), workerId: `w${i}` }, 30_000)));
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
  });

  it('fences the outcome by attempt_id: a stale attempt changes nothing', async () => {
    const id = await execution('queued', { leaseUntil: undefined });
    const first = randomUUID();
    await db.attempts.claim({ id, attemptId: first, workerId: 'w1' }, 1);
    await new Promise((r) => setTimeout(r, 5));
    const second = randomUUID();
    expect((await db.attempts.claim({ id: id, attemptId: second, workerId: 'w2' }, 30_000)).kind).toBe('claimed');
    expect(await db.attempts.markSucceeded(id, first, { from: 'stale' })).toBe(false);
    expect(await db.attempts.markFailed(id, first, 'boom', null)).toBe(false);
    expect(await db.attempts.markSucceeded(id, second, { from: 'current' })).toBe(true);
    const row = await db.prisma.taskExecution.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ status: 'succeeded', attempt: 2, workerId: 'w2', result: { from: 'current' } });
  });

  it('an exclusive run already running at a slot makes that slot busy: the overlap policy decides; the slot stays queued', async () => {
    await endRunning();
    const a = await execution('queued', { exclusive: true, at: Date.now() });
    const b = await execution('queued', { exclusive: true, at: Date.now() + 300 });
    expect((await db.attempts.claim({ id: a, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    // A moment before its own time the slot cannot know whether the run will still be running then.
    expect((await db.attempts.claim({ id: b, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('wait');
    // Looked at again, not held: waiting to be judged does not make it a backlog's run.
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: b } })).heldAt).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await db.attempts.claim({ id: b, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('busy');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: b } })).status).toBe('queued');
  });

  it('a backlog run (one that waited its turn, was released late, or a catch-up) running at a slot does not make it busy: the slot waits behind it, for a while', async () => {
    const backlogs = [
      { heldAt: new Date() },
      { queuedAt: new Date(), fireAt: Date.now() - 5_000 },
      { trigger: 'catchup' as const },
      // Its job reached a worker before the leader marked the row queued, and it started late.
      { at: Date.now() - 60_000, fireAt: Date.now() - 3_000 },
    ];
    for (const backlog of backlogs) {
      await endRunning();
      const a = await execution('queued', { exclusive: true, ...backlog });
      const b = await execution('queued', { exclusive: true, at: Date.now() + 300, queuedAt: new Date() });
      expect((await db.attempts.claim({ id: a, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect((await db.attempts.claim({ id: b, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('wait');
    }
    // A slot that has waited past its grace is judged by the overlap policy after all.
    await endRunning();
    const late = await execution('queued', { exclusive: true, trigger: 'catchup' });
    const waited = await execution('queued', { exclusive: true, at: Date.now() - 6_000, fireAt: Date.now() - 6_000, queuedAt: new Date(Date.now() - 6_000) });
    expect((await db.attempts.claim({ id: late, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    expect((await db.attempts.claim({ id: waited, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('busy');
  });

  it("a slot claimed before the leader marked it queued is judged by its job's release instant: on time, it is not a backlog's", async () => {
    await endRunning();
    const backlog = await execution('queued', { exclusive: true, trigger: 'catchup' });
    expect((await db.attempts.claim({ id: backlog, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    const due = Date.now() - 6_000;
    const onTime = await execution('scheduled', { exclusive: true, at: due, fireAt: due });
    const releasedLate = await execution('scheduled', { exclusive: true, at: due + 1, fireAt: due + 1 });
    const unsaid = await execution('scheduled', { exclusive: true, at: due + 2, fireAt: due + 2 });
    // Released on time and waiting past its grace behind a backlog's run: the overlap policy decides.
    expect((await db.attempts.claim({ id: onTime, attemptId: randomUUID(), workerId: 'w2', releasedAt: due + 50 }, 30_000)).kind).toBe('busy');
    // Released late (the job says so, or says nothing and is being released now): part of the backlog, it waits.
    expect((await db.attempts.claim({ id: releasedLate, attemptId: randomUUID(), workerId: 'w2', releasedAt: Date.now() - 100 }, 30_000)).kind).toBe('wait');
    expect((await db.attempts.claim({ id: unsaid, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('wait');
    // A release instant from a clock running ahead counts as now at most.
    await endRunning();
    const ahead = await execution('scheduled', { exclusive: true, at: Date.now() - 10 });
    expect((await db.attempts.claim({ id: ahead, attemptId: randomUUID(), workerId: 'w3', releasedAt: Date.now() + 60_000 }, 30_000)).kind).toBe('claimed');
    const row = (await db.queries.findById(ahead))!;
    expect(row.queuedAt!.getTime()).toBeLessThanOrEqual(row.startedAt!.getTime());
  });

  it('a run released late (but not as a backlog) is judged as if it had been released on time: the next slot waits as long as the run was late, then the policy decides', async () => {
    await endRunning();
    // Its job reached a worker before the leader marked it queued: released as it started.
    const late = await execution('queued', { exclusive: true, at: Date.now() - 800 });
    const next = await execution('queued', { exclusive: true, at: Date.now() + 200, queuedAt: new Date() });
    expect((await db.attempts.claim({ id: late, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Released on time, the run might have ended before this slot: not its turn yet, not busy.
    expect((await db.attempts.claim({ id: next, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('wait');
    await new Promise((resolve) => setTimeout(resolve, 900));
    // It has now run longer past this slot than it started late: it would have overlapped anyway.
    expect((await db.attempts.claim({ id: next, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('busy');
  });

  it("a backlog's own slot (a catch-up, or one released late after a failover) waits its turn past the grace: a backlog is never skipped for its own sake", async () => {
    for (const own of [{ trigger: 'catchup' as const, at: Date.now() - 30_000, fireAt: Date.now() - 6_000 }, { at: Date.now() - 9_000, fireAt: Date.now() - 9_000, queuedAt: new Date(Date.now() - 2_000) }]) {
      await endRunning();
      const first = await execution('queued', { exclusive: true, trigger: 'catchup', at: Date.now() - 60_000 });
      const next = await execution('queued', { exclusive: true, ...own });
      expect((await db.attempts.claim({ id: first, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
      expect((await db.attempts.claim({ id: next, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('wait');
    }
  });

  it('a run that started after a slot was due does not make it busy: the slot waits its turn, for a while', async () => {
    await endRunning();
    const a = await execution('queued', { exclusive: true, at: Date.now() - 2_000 });
    const b = await execution('queued', { exclusive: true, at: Date.now() - 1_000 });
    expect((await db.attempts.claim({ id: a, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    expect(await db.attempts.claim({ id: b, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).toEqual({ kind: 'wait', taskId });
    // Past its grace a waiting slot is judged by the overlap policy: a slow task cannot pile up.
    await endRunning();
    const slow = await execution('queued', { exclusive: true, at: Date.now() - 7_000 });
    const behind = await execution('queued', { exclusive: true, at: Date.now() - 6_000, queuedAt: new Date(Date.now() - 6_000) });
    expect((await db.attempts.claim({ id: slow, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    expect((await db.attempts.claim({ id: behind, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('busy');
  });

  it('a slot waits while an earlier slot of its task is due and not started (backlogs run in slot order)', async () => {
    await endRunning();
    const earlier = await execution('queued', { exclusive: true });
    const later = await execution('queued', { exclusive: true });
    expect((await db.attempts.claim({ id: later, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('wait');
    // It waited: when it runs, it is part of the backlog.
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: later } })).heldAt).not.toBeNull();
    const first = await db.attempts.claim({ id: earlier, attemptId: randomUUID(), workerId: 'w1' }, 30_000);
    expect(first.kind).toBe('claimed');
    await db.attempts.markSucceeded(earlier, (first as { execution: { attemptId: string } }).execution.attemptId, null);
    expect((await db.attempts.claim({ id: later, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
  });

  it('an earlier slot whose fire_at has not come (jitter) does not hold a later one back', async () => {
    await endRunning();
    const jittered = await execution('scheduled', { exclusive: true, fireAt: Date.now() + 60_000 });
    const due = await execution('queued', { exclusive: true });
    expect((await db.attempts.claim({ id: due, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: jittered } })).status).toBe('scheduled');
  });

  it('a first attempt of a scheduled slot past its maxDelay is left to the leader (late), not claimed', async () => {
    await endRunning();
    const late = await execution('queued', { at: Date.now() - 2 * 3_600_000 });
    expect(await db.attempts.claim({ id: late, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).toEqual({ kind: 'late' });
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: late } })).status).toBe('queued');
    // A catch-up run is never late: the misfire policy made it.
    const catchup = await execution('queued', { at: Date.now() - 2 * 3_600_000 + 1_000, trigger: 'catchup' });
    expect((await db.attempts.claim({ id: catchup, attemptId: randomUUID(), workerId: 'w1' }, 30_000)).kind).toBe('claimed');
  });

  it('does not take over an expired lease when its attempts are used up (the reaper ends it dead)', async () => {
    await endRunning();
    const spent = await execution('running', { leaseUntil: new Date(Date.now() - 1), attempt: 3 });
    expect((await db.attempts.claim({ id: spent, attemptId: randomUUID(), workerId: 'w2' }, 30_000)).kind).toBe('lost');
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: spent } })).attempt).toBe(3);
  });

  it('claims many in one statement: each caller gets its own answer', async () => {
    await endRunning();
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
    const results = await db.attempts.claimMany(requests, 30_000);
    expect(results.map((r) => r.kind)).toEqual(['claimed', 'claimed', 'lost', 'claimed', 'lost']);
    const row = (await db.queries.findById(raced))!;
    expect(row).toMatchObject({ status: 'running', attempt: 1, attemptId: winner, workerId: 'w1' });
    expect(row.events).toHaveLength(1);
    expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: done } })).status).toBe('succeeded');
  });

  it('claims many with a backlog of one task in one statement: the earliest slot starts, the others wait', async () => {
    await endRunning();
    const backlog = [await execution('queued', { exclusive: true }), await execution('queued', { exclusive: true }), await execution('queued', { exclusive: true })];
    const results = await db.attempts.claimMany(backlog.map((id) => ({ id, attemptId: randomUUID(), workerId: 'w1' })), 30_000);
    expect(results.map((r) => r.kind)).toEqual(['claimed', 'wait', 'wait']);
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: backlog } }, orderBy: { scheduledFor: 'asc' } });
    expect(rows.map((r) => r.status)).toEqual(['running', 'queued', 'queued']);
  });

  it('a worker claiming a backlog at once (one shared statement) runs the earliest; the later one waits, none is skipped', async () => {
    const config = sandbox.config();
    const redis = new RedisService(config);
    const claimer = new OverlapClaimer(config, db.attempts, db.executions, redis, new Metrics());
    try {
      await endRunning();
      const a = await execution('queued', { exclusive: true });
      const b = await execution('queued', { exclusive: true });
      const [first, second] = await Promise.all([claimer.claim(a, randomUUID(), 'w1'), claimer.claim(b, randomUUID(), 'w1')]);
      expect([first.kind, second.kind]).toEqual(['claimed', 'wait']);
      expect((await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: b } })).status).toBe('queued');
    } finally {
      await redis.onApplicationShutdown();
    }
  });

  it('overlap=skip: a slot that finds the previous run still running at its own time ends skipped(overlap)', async () => {
    const config = sandbox.config();
    const redis = new RedisService(config);
    const claimer = new OverlapClaimer(config, db.attempts, db.executions, redis, new Metrics());
    try {
      await endRunning();
      const a = await execution('queued', { exclusive: true, at: Date.now() });
      const b = await execution('queued', { exclusive: true, at: Date.now() + 300 });
      expect((await claimer.claim(a, randomUUID(), 'w1')).kind).toBe('claimed');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect((await claimer.claim(b, randomUUID(), 'w1')).kind).toBe('overlap');
      const row = await db.prisma.taskExecution.findUniqueOrThrow({ where: { id: b } });
      expect([row.status, row.skipReason]).toEqual(['skipped', 'overlap']);
    } finally {
      await redis.onApplicationShutdown();
    }
  });

  it('records many successes in one statement, fenced per attempt', async () => {
    await endRunning();
    const ids = [await execution('queued'), await execution('queued')];
    const attempts = [randomUUID(), randomUUID()];
    await db.attempts.claimMany(ids.map((id, i) => ({ id, attemptId: attempts[i]!, workerId: 'w1' })), 30_000);
    const ok = await db.attempts.markSucceededMany([
      { id: ids[0]!, attemptId: attempts[0]!, result: { n: 1 } },
      { id: ids[1]!, attemptId: randomUUID(), result: { stale: true } },
    ]);
    expect(ok).toEqual([true, false]);
    const rows = await Promise.all(ids.map(async (id) => (await db.queries.findById(id))!));
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(ids[0]!)).toMatchObject({ status: 'succeeded', result: { n: 1 } });
    expect(byId.get(ids[0]!)!.events.map((e) => e.toStatus).sort()).toEqual(['running', 'succeeded']);
    expect(byId.get(ids[1]!)).toMatchObject({ status: 'running', result: null });
  });

  it('records many successes as one statement: a result Postgres refuses fails the whole batch and records none', async () => {
    await endRunning();
    const ids = [await execution('queued'), await execution('queued')];
    const attempts = [randomUUID(), randomUUID()];
    await db.attempts.claimMany(ids.map((id, i) => ({ id, attemptId: attempts[i]!, workerId: 'w1' })), 30_000);
    // jsonb refuses \u0000; the worker then records each success on its own (see Batcher).
    await expect(
      db.attempts.markSucceededMany([
        { id: ids[0]!, attemptId: attempts[0]!, result: { ok: true } },
        { id: ids[1]!, attemptId: attempts[1]!, result: { text: 'nul \u0000 here' } },
      ]),
    ).rejects.toThrow();
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: ids } } });
    expect(rows.map((r) => r.status)).toEqual(['running', 'running']);
    expect(await db.attempts.markSucceeded(ids[0]!, attempts[0]!, { ok: true })).toBe(true);
  });
});
