import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db, ExecutionStatus } from '../../libs/db/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { sleep } from '../support/processes.js';
import { openRepositories } from '../support/repositories.js';

/**
 * A worker's claim of an attempt against real Postgres: the snapshot read, the judgement
 * (`judgeClaim`, table-tested in its spec) and the fenced write, through `ExecutionClaimer`.
 */
describe('claiming an execution', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let taskId: string;
  let slot = 0;
  /** Slots within maxDelay (1 h): none is late. */
  const BASE = Date.now() - 600_000;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    taskId = (
      await db.prisma.task.create({
        data: { name: 'claims', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
      })
    ).id;
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });
  // Each test starts with the task free: earlier tests' runs and slots end as if done.
  beforeEach(async () => {
    await db.prisma.taskExecution.updateMany({
      where: { taskId, status: { in: ['running', 'retrying', 'queued', 'scheduled'] } },
      data: { status: 'dead' },
    });
    await db.prisma.task.update({
      where: { id: taskId },
      data: { overlap: 'skip', planVersion: 1, version: { increment: 1 } },
    });
  });

  /** The instants of the task's slots so far (`scheduled_for` is unique per task). */
  const used = new Set<number>();

  /** An execution of the task; slots are one second apart in the last ten minutes, in creation order, unless `at` is given. */
  async function execution(
    status: ExecutionStatus,
    extra: {
      leaseUntil?: Date;
      exclusive?: boolean;
      at?: number;
      fireAt?: number;
      attempt?: number;
      queuedAt?: Date;
      startedAt?: Date;
      trigger?: 'catchup';
      nextAttemptAt?: Date;
    } = {},
  ) {
    const id = randomUUID();
    slot += 1;
    const { at, fireAt, ...rest } = extra;
    // One slot per instant of the task: an instant asked for twice (two tests a few seconds apart
    // can land on the same millisecond) moves on by a millisecond.
    let instant = at ?? BASE + slot * 1000;
    while (used.has(instant)) instant += 1;
    used.add(instant);
    const scheduledFor = new Date(instant);
    await db.prisma.taskExecution.create({
      data: {
        id,
        taskId,
        taskName: 'claims',
        scheduledFor,
        fireAt: new Date(fireAt ?? scheduledFor.getTime()),
        taskVersion: 1,
        status,
        exclusive: false,
        ...rest,
      },
    });
    return id;
  }
  const claim = (id: string, workerId = 'w1', attemptId = randomUUID()) => db.claim({ id, attemptId, workerId });
  const row = (id: string) => db.prisma.taskExecution.findFirstOrThrow({ where: { id } });
  /** As if the attempt running `id` had started at `at` (a claim starts it now). */
  const startedAt = (id: string, at: number) =>
    db.prisma.taskExecution.updateMany({ where: { id }, data: { startedAt: new Date(at) } });
  /** Claims read again to be judged, as the worker counts them. */
  const reads = async () => (await db.metrics.claimReads.get()).values[0]?.value ?? 0;
  /** Another client's transaction that takes its locks with `lock` and holds them until `release()`; `done`: its end. */
  async function holdLocks(lock: (tx: Db) => Promise<unknown>) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const done = db.prisma.$transaction(
      async (tx) => {
        await lock(tx);
        locked();
        await released;
      },
      { timeout: 60_000 },
    );
    await isLocked;
    return { release, done };
  }

  it.each(['scheduled', 'queued', 'retrying'] as const)(
    'claims from %s: running, attempt + 1, a fresh attempt_id and a lease',
    async (status) => {
      const queuedAt = status === 'queued' ? new Date(Date.now() - 100) : undefined;
      const id = await execution(status, {
        queuedAt,
        attempt: status === 'retrying' ? 1 : 0,
        startedAt: status === 'retrying' ? new Date(Date.now() - 500) : undefined,
      });
      const attemptId = randomUUID();
      const result = await claim(id, 'w1', attemptId);
      expect(result.kind).toBe('run');
      // The definition the attempt runs under comes with the claim.
      expect(result.kind === 'run' && [result.task.id, result.task.handler]).toEqual([taskId, 'noop']);
      const found = (await db.queries.findById(id))!;
      expect(found).toMatchObject({
        status: 'running',
        attempt: status === 'retrying' ? 2 : 1,
        attemptId,
        workerId: 'w1',
      });
      expect(found.leaseUntil!.getTime() - found.startedAt!.getTime()).toBe(sandbox.config().leaseMs);
      const history = found.events.map((e) => [e.fromStatus, e.toStatus]);
      // A claim from `scheduled` (before the leader marked the row) records the release itself.
      expect(history).toEqual(
        status === 'retrying'
          ? [
              ['scheduled', 'running'],
              ['retrying', 'running'],
            ]
          : [
              ['scheduled', 'queued'],
              ['queued', 'running'],
            ],
      );
    },
  );

  it.each(['succeeded', 'dead', 'skipped', 'missed', 'cancelled'] as const)(
    'does not claim a finished (%s) execution',
    async (status) => {
      const id = await execution(status);
      expect((await claim(id)).kind).toBe('dropped');
      expect((await row(id)).status).toBe(status);
    },
  );

  it('does not claim a running execution whose lease holds; takes over an expired one while attempts remain', async () => {
    const held = await execution('running', { leaseUntil: new Date(Date.now() + 60_000), attempt: 1 });
    expect((await claim(held, 'w2')).kind).toBe('dropped');
    const expired = await execution('running', {
      leaseUntil: new Date(Date.now() - 1),
      attempt: 1,
      startedAt: new Date(Date.now() - 5_000),
    });
    const result = await claim(expired, 'w2');
    expect(result.kind === 'run' && [result.execution.workerId, result.execution.attempt]).toEqual(['w2', 2]);
    const spent = await execution('running', {
      leaseUntil: new Date(Date.now() - 1),
      attempt: 3,
      startedAt: new Date(Date.now() - 5_000),
    });
    expect((await claim(spent, 'w2')).kind).toBe('dropped');
    expect((await row(spent)).attempt).toBe(3);
  });

  it('lets exactly one of many concurrent claims win', async () => {
    const id = await execution('queued');
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(id, `w${i}`)));
    expect(claims.filter((c) => c.kind === 'run')).toHaveLength(1);
    expect(claims.filter((c) => c.kind !== 'run').map((c) => c.kind)).toEqual(Array(7).fill('dropped'));
  });

  it('fences the outcome by attempt_id: a stale attempt changes nothing', async () => {
    const id = await execution('queued');
    const first = randomUUID();
    expect((await db.claim({ id, attemptId: first, workerId: 'w1' }, { leaseMs: 1 })).kind).toBe('run');
    // Its lease of 1 ms runs out: the next attempt takes over.
    await db.clockPasses((await row(id)).leaseUntil!, 'the first lease');
    const second = randomUUID();
    expect((await claim(id, 'w2', second)).kind).toBe('run');
    expect(await db.attempts.markSucceeded(id, first, { from: 'stale' })).toBe(false);
    expect(await db.attempts.markFailed(id, first, 'boom', null)).toBe(false);
    expect(await db.attempts.markSucceeded(id, second, { from: 'current' })).toBe(true);
    expect(await row(id)).toMatchObject({
      status: 'succeeded',
      attempt: 2,
      workerId: 'w2',
      result: { from: 'current' },
    });
  });

  it('a claim given back (its handler never started) spends no attempt: a first one returns to queued, a later one to retrying', async () => {
    const first = await execution('queued', { queuedAt: new Date() });
    const attemptId = randomUUID();
    expect((await claim(first, 'w1', attemptId)).kind).toBe('run');
    expect(await db.claims.giveBack(first, randomUUID(), 'not mine')).toBe(false);
    expect(await db.claims.giveBack(first, attemptId, 'confirmed too late')).toBe(true);
    expect(await row(first)).toMatchObject({ status: 'queued', attempt: 0, startedAt: null, leaseUntil: null });
    expect((await claim(first)).kind === 'run' && (await row(first)).attempt).toBe(1);
    const later = await execution('retrying', { attempt: 1, startedAt: new Date(Date.now() - 5_000) });
    const second = randomUUID();
    expect((await claim(later, 'w1', second)).kind).toBe('run');
    expect(await db.claims.giveBack(later, second, 'confirmed too late')).toBe(true);
    expect(await row(later)).toMatchObject({ status: 'retrying', attempt: 1 });
    const history = (await db.queries.findById(later))!.events.map((e) => [
      e.fromStatus,
      e.toStatus,
      (e.detail as { reason?: string } | null)?.reason ?? null,
    ]);
    expect(history.at(-1)).toEqual(['running', 'retrying', 'given back']);
  });

  it("never early: a slot whose fire_at has not come by Postgres' clock is not claimed, and is told when to come back", async () => {
    const id = await execution('queued', { at: Date.now() - 1_000, fireAt: Date.now() + 800 });
    const result = await claim(id);
    expect(result.kind === 'later' && result.why).toBe('early');
    expect(result.kind === 'later' && result.afterMs).toBeGreaterThan(0);
    expect((await row(id)).status).toBe('queued');
    // A retry waits for its next attempt's instant.
    const retry = await execution('retrying', {
      attempt: 1,
      startedAt: new Date(Date.now() - 2_000),
      nextAttemptAt: new Date(Date.now() + 800),
    });
    expect(await claim(retry)).toMatchObject({ kind: 'later', why: 'early' });
  });

  it('a first attempt past its maxDelay is left to the leader (late), not claimed; a catch-up run is never late', async () => {
    const late = await execution('queued', { at: Date.now() - 2 * 3_600_000 });
    expect(await claim(late)).toEqual({ kind: 'later', why: 'late', afterMs: 2_000 });
    expect((await row(late)).status).toBe('queued');
    const catchup = await execution('queued', { at: Date.now() - 2 * 3_600_000 + 1_000, trigger: 'catchup' });
    expect((await claim(catchup)).kind).toBe('run');
  });

  describe('a slot being retried still holds its task', () => {
    it('overlap=skip: the next slot is skipped while the previous one is retrying, and the retry runs', async () => {
      const due = Date.now() - 3_000;
      const a = await execution('queued', { exclusive: true, at: due });
      const attemptId = randomUUID();
      expect((await claim(a, 'w1', attemptId)).kind).toBe('run');
      await startedAt(a, due);
      expect(await db.attempts.markFailed(a, attemptId, 'boom', new Date())).toBe(true);
      // The next slot comes while `a` waits for its retry.
      const b = await execution('queued', {
        exclusive: true,
        at: Date.now() - 1_000,
        queuedAt: new Date(Date.now() - 1_000),
      });
      expect(await claim(b, 'w2')).toEqual({ kind: 'skipped', reason: 'overlap' });
      expect(await row(b)).toMatchObject({ status: 'skipped', skipReason: 'overlap' });
      const retry = await claim(a, 'w1');
      expect(retry.kind === 'run' && retry.execution.attempt).toBe(2);
    });

    it('a retry whose next slot started first (before the fix it was skipped(overlap)) waits for it, never skipped', async () => {
      await db.prisma.task.update({ where: { id: taskId }, data: { overlap: 'allow', version: { increment: 1 } } });
      const a = await execution('retrying', {
        exclusive: true,
        attempt: 1,
        at: Date.now() - 20_000,
        startedAt: new Date(Date.now() - 19_000),
      });
      const b = await execution('running', {
        exclusive: true,
        attempt: 1,
        at: Date.now() - 10_000,
        startedAt: new Date(Date.now() - 10_000),
        leaseUntil: new Date(Date.now() + 60_000),
      });
      await db.prisma.task.update({ where: { id: taskId }, data: { overlap: 'skip', version: { increment: 1 } } });
      expect((await claim(a)).kind).toBe('parked');
      expect(await row(a)).toMatchObject({ status: 'retrying', parkedAt: expect.any(Date) });
      expect((await row(b)).waitedOn).toBe(true);
      await db.prisma.taskExecution.updateMany({ where: { id: b }, data: { status: 'succeeded' } });
      expect((await claim(a)).kind).toBe('run');
    });

    it('after a worker crash (an expired lease) the next attempt takes over without being judged by the overlap policy', async () => {
      const a = await execution('running', {
        exclusive: true,
        attempt: 1,
        at: Date.now() - 9_000,
        startedAt: new Date(Date.now() - 9_000),
        leaseUntil: new Date(Date.now() - 100),
      });
      // A slot that came after `a` started: pending behind it.
      await execution('queued', { exclusive: true, at: Date.now() - 2_000 });
      const takeover = await claim(a, 'w2');
      expect(takeover.kind === 'run' && takeover.execution.attempt).toBe(2);
    });

    it.each([
      ['buffer_one', 'queued'],
      ['replace', 'running'],
    ] as const)('overlap=%s: a newcomer is judged against the retrying slot', async (overlap, newcomerAfter) => {
      await db.prisma.task.update({ where: { id: taskId }, data: { overlap, version: { increment: 1 } } });
      const a = await execution('retrying', {
        exclusive: true,
        attempt: 1,
        at: Date.now() - 5_000,
        startedAt: new Date(Date.now() - 5_000),
        nextAttemptAt: new Date(Date.now() + 60_000),
      });
      const b = await execution('queued', {
        exclusive: true,
        at: Date.now() - 1_000,
        queuedAt: new Date(Date.now() - 1_000),
      });
      await claim(b, 'w2');
      expect((await row(b)).status).toBe(newcomerAfter);
      expect((await row(a)).status).toBe(overlap === 'replace' ? 'cancelled' : 'retrying');
    });
  });

  describe('the one-statement claim', () => {
    it('starts a due slot of a free task in one statement: no read, no judgement', async () => {
      const before = await reads();
      const slot = await execution('queued', { exclusive: true, at: Date.now() - 1_000 });
      const result = await claim(slot);
      expect(result.kind === 'run' && [result.execution.status, result.execution.attempt]).toEqual(['running', 1]);
      expect(await reads()).toBe(before);
    });

    it("a run of the task that ended before the slot's instant is not held against it: started in one statement", async () => {
      const holder = await execution('queued', { exclusive: true, at: Date.now() - 2_000 });
      const attemptId = randomUUID();
      expect((await claim(holder, 'w1', attemptId)).kind).toBe('run');
      await startedAt(holder, Date.now() - 2_000);
      const at = Date.now() + 300;
      const slot = await execution('queued', { exclusive: true, at });
      expect(await db.attempts.markSucceeded(holder, attemptId, null)).toBe(true);
      await db.clockPasses(at, "the slot's instant");
      const before = await reads();
      expect((await claim(slot)).kind).toBe('run');
      expect(await reads()).toBe(before);
    });

    it("a task not free (a run went retrying before the slot's time) starts nothing: the slot is read and judged (skipped for the overlap)", async () => {
      const at = Date.now() + 300;
      const slot = await execution('queued', { exclusive: true, at });
      // A run that started before the slot's time fails and waits for its retry: it holds the task.
      await execution('retrying', {
        exclusive: true,
        attempt: 1,
        at: Date.now() - 5_000,
        startedAt: new Date(Date.now() - 5_000),
        nextAttemptAt: new Date(Date.now() + 60_000),
      });
      await db.clockPasses(at, "the slot's instant");
      const before = await reads();
      expect(await claim(slot)).toEqual({ kind: 'skipped', reason: 'overlap' });
      expect(await reads()).toBe(before + 1);
    });
  });

  describe('backlogs and the overlap policy', () => {
    it('overlap=skip: a slot that finds the previous run still running at its own time ends skipped(overlap)', async () => {
      const due = Date.now() - 2_000;
      const a = await execution('queued', { exclusive: true, at: due });
      expect((await claim(a)).kind).toBe('run');
      // Started on time: the overlap is the task's, not a late release's.
      await startedAt(a, due);
      const b = await execution('queued', { exclusive: true, at: Date.now() - 10, queuedAt: new Date() });
      expect(await claim(b)).toEqual({ kind: 'skipped', reason: 'overlap' });
    });

    it("a run whose success statement began before the next slot's time but reaches its row after the slot was skipped on it: its recorded end is when its row took it", async () => {
      const now = Date.now();
      await db.prisma.taskExecution.deleteMany({
        where: { taskId, scheduledFor: { gt: new Date(now - 3_100), lt: new Date(now + 1_000) } },
      });
      const a = await execution('queued', { exclusive: true, at: now - 3_000 });
      const other = await execution('queued', { at: now - 2_500 });
      const [ranA, ranOther] = [await claim(a), await claim(other)];
      if (ranA.kind !== 'run' || ranOther.kind !== 'run') throw new Error('both should start');
      await startedAt(a, now - 3_000);
      // The batch's first row is held by another transaction: the statement waits there before it reaches a's row.
      const { release, done: holding } = await holdLocks(
        (tx) => tx.$queryRaw`SELECT id FROM task_execution WHERE id = ${other}::uuid FOR UPDATE`,
      );
      let success: ReturnType<typeof db.attempts.succeed> | undefined;
      try {
        success = db.attempts.succeed([
          { id: other, attemptId: ranOther.execution.attemptId!, result: null },
          { id: a, attemptId: ranA.execution.attemptId!, result: null },
        ]);
        await sleep(300);
        const b = await execution('queued', { exclusive: true, at: Date.now() - 100, queuedAt: new Date() });
        // a is running and unlocked as far as any claim can see: b is skipped on it.
        expect(await claim(b)).toEqual({ kind: 'skipped', reason: 'overlap' });
        release();
        expect((await success).current).toEqual([true, true]);
        // The history explains the skip: a ended after b's time, not when its statement began.
        expect((await row(a)).finishedAt!.getTime()).toBeGreaterThanOrEqual((await row(b)).finishedAt!.getTime());
      } finally {
        release();
        await holding;
        await success?.catch(() => undefined);
      }
    });

    it("a run whose success is on its way (its write behind a lock) at the next slot's time: the slot is not skipped on it, and runs once the success lands", async () => {
      const now = Date.now();
      await db.prisma.taskExecution.deleteMany({
        where: { taskId, scheduledFor: { gt: new Date(now - 3_100), lt: new Date(now + 1_000) } },
      });
      const a = await execution('queued', { exclusive: true, at: now - 3_000 });
      const claimed = await claim(a);
      expect(claimed.kind).toBe('run');
      await startedAt(a, now - 3_000);
      // Another transaction holds a's row (under load: a leader's fenced write of the rows it fired).
      const { release, done: holding } = await holdLocks(
        (tx) => tx.$queryRaw`SELECT id FROM task_execution WHERE id = ${a}::uuid FOR UPDATE`,
      );
      let success: ReturnType<typeof db.attempts.succeed> | undefined;
      try {
        // a's handler has ended: its success is written (finished_at: this instant) and waits for the lock.
        const attemptId = claimed.kind === 'run' ? claimed.execution.attemptId! : '';
        success = db.attempts.succeed([{ id: a, attemptId, result: null }]);
        await sleep(300);
        const b = await execution('queued', { exclusive: true, at: Date.now() - 100, queuedAt: new Date() });
        // a still looks running, and long enough to be the task's own overlap: b would be skipped.
        // But a's row is being written: b is not skipped on it, it comes back a moment later.
        const readsBefore = await reads();
        const first = await claim(b);
        expect(first.kind === 'later' && first.why).toBe('contended');
        // What it cost: two reads (the second finds the run still held), then its job comes back
        // later — it does not re-read while the write waits.
        expect((await reads()) - readsBefore).toBe(2);
        expect(first.kind === 'later' && first.afterMs).toBe(250);
        expect((await row(b)).status).toBe('queued');
        release();
        expect((await success).current).toEqual([true]);
        // a ended before b's time: b runs.
        expect((await claim(b)).kind).toBe('run');
        expect((await row(a)).finishedAt!.getTime()).toBeLessThan((await row(b)).scheduledFor.getTime());
      } finally {
        release();
        await holding;
        await success?.catch(() => undefined);
      }
    });

    it('a run released late (after a failover) makes the next slot ask again until it has waited as long, then the policy decides', async () => {
      const now = Date.now();
      // Released 6 s after its fire_at, just before the next slot (6 s: wide enough that a busy
      // machine's pauses between the steps below stay inside the wait they judge; the check within
      // the wait comes 1 s into it, leaving 5 s for such a pause).
      const LATE = 6_000;
      const late = await execution('queued', { exclusive: true, at: now - LATE - 100, queuedAt: new Date(now - 100) });
      expect((await claim(late)).kind).toBe('run');
      await startedAt(late, now - 100);
      const nextAt = now - 50;
      // The late run's slot is the one before the next (the tests share a task: earlier tests' slots of the last seconds go).
      await db.prisma.taskExecution.deleteMany({
        where: { taskId, scheduledFor: { gt: new Date(now - LATE - 100), lt: new Date(nextAt) } },
      });
      const next = await execution('queued', { exclusive: true, at: nextAt, queuedAt: new Date(now) });
      // It comes back once it has waited as long as the run ahead was late (or sooner, should the run end on the same worker).
      const first = await claim(next);
      expect(first.kind === 'later' && [first.why, first.afterMs! > 0 && first.afterMs! <= LATE]).toEqual([
        'allowance',
        true,
      ]);
      await db.clockPasses(nextAt + 1_000, 'a second into the wait');
      expect((await claim(next)).kind).toBe('later');
      await db.clockPasses(nextAt + LATE, 'the end of the wait');
      expect(await claim(next)).toEqual({ kind: 'skipped', reason: 'overlap' });
    });

    it("a late run that has lasted longer than the gap from the slot before is the task's own overlap: the next slot is judged at once", async () => {
      const now = Date.now();
      // The slots of the last 5 s are this test's: a late run ahead (slot 5 s ago, started 2.5 s ago, still running)
      // and the slot before the next one (1 s before it), as a slow task behind its schedule has them.
      await db.prisma.taskExecution.deleteMany({
        where: { taskId, scheduledFor: { gt: new Date(now - 5_100), lt: new Date(now) } },
      });
      const ahead = await execution('queued', { exclusive: true, at: now - 5_000, queuedAt: new Date(now - 5_000) });
      expect((await claim(ahead)).kind).toBe('run');
      await startedAt(ahead, now - 2_500);
      await execution('skipped', { exclusive: true, at: now - 1_050 });
      const next = await execution('queued', { exclusive: true, at: now - 50, queuedAt: new Date(now) });
      // Its lateness (2.5 s) would have the slot wait; but it has run 2.5 s, longer than the gap (1 s).
      expect(await claim(next)).toEqual({ kind: 'skipped', reason: 'overlap' });
    });

    it('a backlog runs one after another in slot order, and a slot that waited its turn is never skipped for it', async () => {
      const backlog = [0, 1, 2].map((i) =>
        execution('queued', { exclusive: true, at: Date.now() - 8_000 + i * 1_000, queuedAt: new Date() }),
      );
      const [a, b, c] = await Promise.all(backlog);
      // Claimed together (one read, one write): the earliest starts, the others wait.
      const results = await Promise.all([claim(a!), claim(b!), claim(c!)]);
      expect(results.map((r) => r.kind)).toEqual(['run', 'parked', 'parked']);
      const attemptOf = (r: (typeof results)[number]) => (r.kind === 'run' ? r.execution.attemptId! : '');
      // Long after, b and c still wait for their turn rather than being judged by the policy.
      await db.prisma.taskExecution.updateMany({
        where: { id: a! },
        data: { startedAt: new Date(Date.now() - 1_000) },
      });
      expect((await claim(c!)).kind).toBe('parked');
      // The end of a's run hands the turn to b (the earliest parked), and only to b.
      const first = await db.attempts.succeed([{ id: a!, attemptId: attemptOf(results[0]!), result: null }]);
      expect(first.current).toEqual([true]);
      expect(first.handed.map((h) => h.id)).toEqual([b]);
      expect((await row(b!)).parkedAt).toBeNull();
      expect((await row(c!)).parkedAt).not.toBeNull();
      const second = await claim(b!);
      expect(second.kind).toBe('run');
      expect((await claim(c!)).kind).toBe('parked');
      expect(
        (await db.attempts.succeed([{ id: b!, attemptId: attemptOf(second), result: null }])).handed.map((h) => h.id),
      ).toEqual([c]);
      expect((await claim(c!)).kind).toBe('run');
    });

    it("an on-time slot fired behind its task's held catch-ups is parked by the leader, never claimed, and handed its turn by the last of them", async () => {
      const now = Date.now();
      const a = await execution('scheduled', { exclusive: true, trigger: 'catchup', at: now - 5_000 });
      const b = await execution('scheduled', { exclusive: true, trigger: 'catchup', at: now - 4_000 });
      const onTime = await execution('scheduled', { exclusive: true, at: now - 10 });
      const readsBefore = await reads();
      expect(await db.turns.parkAtFire([onTime], now)).toEqual(new Set([onTime]));
      expect(await row(onTime)).toMatchObject({
        status: 'scheduled',
        parkedAt: expect.any(Date),
        queuedAt: new Date(now),
      });
      // What it waits behind is the nearest earlier slot, marked so that its end looks for the waiter.
      expect([(await row(a)).waitedOn, (await row(b)).waitedOn]).toEqual([false, true]);
      expect(await db.turns.parkAtFire([onTime], now)).toEqual(new Set());

      const ranA = await claim(a);
      expect(ranA.kind).toBe('run');
      const attemptOf = (r: typeof ranA) => (r.kind === 'run' ? r.execution.attemptId! : '');
      // a's end: b is the task's next slot, not parked (its job comes on its own): nobody is handed.
      expect((await db.attempts.succeed([{ id: a, attemptId: attemptOf(ranA), result: null }])).handed).toEqual([]);
      const ranB = await claim(b);
      expect(ranB.kind).toBe('run');
      const handed = await db.attempts.succeed([{ id: b, attemptId: attemptOf(ranB), result: null }]);
      expect(handed.handed.map((h) => h.id)).toEqual([onTime]);
      expect((await claim(onTime)).kind).toBe('run');
      // The on-time slot was claimed once, when its turn had come: the catch-ups' own claims started
      // in one statement each, and nothing was read to be judged.
      expect((await reads()) - readsBefore).toBe(0);
    });

    it('the leader parks at fire only what a claim could only park: never beside a run in progress, with nothing ahead, or for a paused task', async () => {
      const now = Date.now();
      // Nothing earlier due: its turn has come.
      const free = await execution('scheduled', { exclusive: true, at: now - 10 });
      expect(await db.turns.parkAtFire([free], now)).toEqual(new Set());
      // A run of the task in progress: the overlap policy may judge the slot, so its claim decides.
      await execution('running', { exclusive: true, at: now - 6_000, startedAt: new Date(now - 6_000) });
      await execution('scheduled', { exclusive: true, trigger: 'catchup', at: now - 5_000 });
      const besideARun = await execution('scheduled', { exclusive: true, at: now - 5 });
      expect(await db.turns.parkAtFire([besideARun], now)).toEqual(new Set());
      await db.prisma.taskExecution.updateMany({ where: { taskId, status: 'running' }, data: { status: 'succeeded' } });
      // Paused: the claim skips it.
      await db.prisma.task.update({ where: { id: taskId }, data: { status: 'paused' } });
      expect(await db.turns.parkAtFire([besideARun], now)).toEqual(new Set());
      await db.prisma.task.update({ where: { id: taskId }, data: { status: 'active' } });
      expect(await db.turns.parkAtFire([besideARun], now)).toEqual(new Set([besideARun]));
      expect((await row(free)).parkedAt).toBeNull();
    });

    it('an earlier slot whose fire_at has not come (jitter) does not hold a later one back', async () => {
      const jittered = await execution('scheduled', { exclusive: true, fireAt: Date.now() + 60_000 });
      const due = await execution('queued', { exclusive: true });
      expect((await claim(due)).kind).toBe('run');
      expect((await row(jittered)).status).toBe('scheduled');
    });
  });

  describe('races with operators', () => {
    it("an edit committed between the claim's read and its write: the write changes nothing, the claim runs the new definition", async () => {
      const id = await execution('queued');
      const read = (await db.claims.read([{ id }])).get(id)!;
      await db.prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM task WHERE id = ${taskId}::uuid FOR UPDATE`;
        await db.executions.lockUnfinished(taskId, tx);
        await tx.task.update({
          where: { id: taskId },
          data: { payload: { v: 2 }, planVersion: { increment: 1 }, version: { increment: 1 } },
        });
        await tx.taskExecution.updateMany({ where: { id }, data: { taskVersion: { increment: 1 } } });
      });
      const write = {
        id,
        attemptId: randomUUID(),
        workerId: 'w1',
        free: false,
        seen: {
          status: read.execution.status,
          attempt: 0,
          fireAt: read.execution.fireAt,
          planVersion: read.task!.planVersion,
        },
      };
      expect(await db.claims.claimOne(write, 30_000)).toEqual({ kind: 'again', why: 'changed' });
      const result = await claim(id);
      expect(result.kind === 'run' && result.task.payload).toEqual({ v: 2 });
    });

    it("an edit in progress holds the task's rows: its claim comes back later instead of waiting, and claims of other tasks go on", async () => {
      const other = (
        await db.prisma.task.create({
          data: { name: 'other', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
        })
      ).id;
      const mine = await execution('queued');
      const theirs = randomUUID();
      await db.prisma.taskExecution.create({
        data: {
          id: theirs,
          taskId: other,
          taskName: 'other',
          scheduledFor: new Date(BASE),
          fireAt: new Date(BASE),
          taskVersion: 1,
          status: 'queued',
        },
      });
      // An API transaction (an edit, a `tasks:batch` of many) holding the task and its rows.
      const { release, done: edit } = await holdLocks(async (tx) => {
        await tx.$queryRaw`SELECT id FROM task WHERE id = ${taskId}::uuid FOR UPDATE`;
        await db.executions.lockUnfinished(taskId, tx);
      });
      try {
        // Claimed together, in one read and one write: the other task's slot starts while the transaction is still open.
        const [a, b] = await Promise.all([claim(mine), claim(theirs)]);
        expect(b.kind).toBe('run');
        expect(a.kind).toBe('later');
        expect((await row(mine)).status).toBe('queued');
      } finally {
        release();
        await edit;
      }
      expect((await claim(mine)).kind).toBe('run');
    });
  });

  it('records many successes in one statement, fenced per attempt', async () => {
    const ids = [await execution('queued'), await execution('queued')];
    const attempts = [randomUUID(), randomUUID()];
    await Promise.all(ids.map((id, i) => claim(id, 'w1', attempts[i])));
    const ok = await db.attempts.succeed([
      { id: ids[0]!, attemptId: attempts[0]!, result: { n: 1 } },
      { id: ids[1]!, attemptId: randomUUID(), result: { stale: true } },
    ]);
    expect(ok.current).toEqual([true, false]);
    const rows = await Promise.all(ids.map(async (id) => (await db.queries.findById(id))!));
    expect(rows[0]).toMatchObject({ status: 'succeeded', result: { n: 1 } });
    expect(rows[0]!.events.map((e) => e.toStatus).sort()).toEqual(['running', 'succeeded']);
    expect(rows[1]).toMatchObject({ status: 'running', result: null });
  });

  it('records many successes as one statement: a result Postgres refuses fails the whole batch and records none', async () => {
    const ids = [await execution('queued'), await execution('queued')];
    const attempts = [randomUUID(), randomUUID()];
    await Promise.all(ids.map((id, i) => claim(id, 'w1', attempts[i])));
    // jsonb refuses \u0000; the worker then records each success on its own (see Batcher).
    await expect(
      db.attempts.succeed([
        { id: ids[0]!, attemptId: attempts[0]!, result: { ok: true } },
        { id: ids[1]!, attemptId: attempts[1]!, result: { text: 'nul \u0000 here' } },
      ]),
    ).rejects.toThrow();
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: ids } } });
    expect(rows.map((r) => r.status)).toEqual(['running', 'running']);
    expect(await db.attempts.markSucceeded(ids[0]!, attempts[0]!, { ok: true })).toBe(true);
  });
});
