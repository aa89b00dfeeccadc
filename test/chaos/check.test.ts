import { randomUUID } from 'node:crypto';
import { executionIdFor } from '../../libs/contract/src/index.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkChaos } from '../../chaos/check.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

/**
 * The chaos run's verdict reads what the system wrote: runs that went the happy path (no history
 * rows, DESIGN §3) count as running and started, and a stored history still counts.
 */
describe("the chaos run's check", () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let client: pg.Client;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    client = new pg.Client({ connectionString: sandbox.databaseUrl });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.close();
    await sandbox?.dispose();
  });

  it('judges overlap skips, start delays and double successes from the history, derived or stored', async () => {
    const task = await db.prisma.task.create({
      data: { name: 'checked', handler: 'http', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
    });
    const slot = (at: Date, data: Record<string, unknown> = {}) =>
      db.prisma.taskExecution.create({
        data: {
          id: executionIdFor(at),
          taskId: task.id,
          taskName: task.name,
          scheduledFor: at,
          fireAt: at,
          taskVersion: 1,
          status: 'scheduled',
          exclusive: true,
          ...data,
        },
      });

    // A runs on its first attempt; B comes while it runs and the claim finds the task busy: B is skipped for overlap.
    const a = await slot(new Date(Date.now() - 100));
    const attempt = randomUUID();
    expect((await db.claim({ id: a.id, attemptId: attempt, workerId: 'w1' })).kind).toBe('run');
    const bAt = Date.now() + 50;
    const b = await slot(new Date(bAt));
    // The claim judges B once it has waited as long as A was released late (the overlap may be the
    // late release's, see judgeClaim): A's claim released it ~100 ms after its fire_at.
    const { queuedAt, fireAt } = await db.prisma.taskExecution.findFirstOrThrow({ where: { id: a.id } });
    await db.clockPasses(
      bAt + queuedAt!.getTime() - fireAt.getTime(),
      "B's slot, and as long again as A was released late",
    );
    expect(await db.claim({ id: b.id, attemptId: randomUUID(), workerId: 'w2' })).toEqual({
      kind: 'skipped',
      reason: 'overlap',
    });
    expect((await db.attempts.succeed([{ id: a.id, attemptId: attempt, result: null }])).current).toEqual([true]);

    // C was skipped for overlap a minute later, with nothing running.
    const lonely = new Date(Date.now() + 60_000);
    await slot(lonely, { status: 'skipped', skipReason: 'overlap', finishedAt: new Date(lonely.getTime() + 10) });
    // D's success was recorded twice (stored history rows, as an older version wrote them).
    const d = await slot(new Date(Date.now() - 5_000), {
      status: 'succeeded',
      attempt: 1,
      startedAt: new Date(Date.now() - 4_990),
      finishedAt: new Date(),
      workerId: 'w1',
    });
    await db.prisma.executionEvent.createMany({
      data: [1, 2].map(() => ({
        executionId: d.id,
        scheduledFor: d.scheduledFor,
        fromStatus: 'running' as const,
        toStatus: 'succeeded' as const,
        workerId: 'w1',
      })),
    });
    // E started 1.5 s late.
    const eDue = Date.now() - 10_000;
    const e = await slot(new Date(eDue), {
      status: 'succeeded',
      attempt: 1,
      startedAt: new Date(eDue + 1_500),
      finishedAt: new Date(eDue + 1_600),
      workerId: 'w1',
    });

    const verdict = await checkChaos(client, [], [], Date.now());
    expect(await db.prisma.executionEvent.count({ where: { executionId: a.id } })).toBe(0);
    expect(verdict.wrongSkips).toEqual([expect.stringContaining(`@ ${lonely.toISOString()}`)]);
    expect(verdict.doubleSuccess).toEqual([d.id]);
    const rows = await db.prisma.taskExecution.findMany({ where: { id: { in: [a.id, d.id, e.id] } } });
    const delays = rows.map((r) => r.startedAt!.getTime() - r.fireAt.getTime()).sort((x, y) => x - y);
    expect(delays[2]).toBe(1_500);
    expect(verdict.startDelayMs).toEqual({ p50: delays[1], p99: 1_500 });
    expect(verdict.lateStartsByTask).toEqual(['checked (overlap skip, misfire run_once): 1 slot(s), worst 1500 ms']);
  });

  /** A task of its own (so each test reads only its lines of the verdict), and a row maker for it. */
  async function taskWithRows(name: string) {
    const task = await db.prisma.task.create({
      data: { name, handler: 'http', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
    });
    const row = (at: number, data: Record<string, unknown> = {}) =>
      db.prisma.taskExecution.create({
        data: {
          id: executionIdFor(new Date(at)),
          taskId: task.id,
          taskName: name,
          scheduledFor: new Date(at),
          fireAt: new Date(at),
          taskVersion: 1,
          status: 'succeeded',
          exclusive: true,
          ...data,
        },
      });
    return { task, row };
  }
  const linesOf = (lines: string[], name: string) =>
    lines.filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}:`));
  const call = (executionId: string, at: number, endedAt: number | null, status = 200) => ({
    executionId,
    url: '/hit',
    at,
    status,
    endedAt,
    aborted: false,
  });

  it('a skipped retry and a slot skipped after waiting its turn are wrong skips; a newcomer skipped while a retry held the task is not', async () => {
    const t0 = Date.now() - 60_000;
    const { row } = await taskWithRows('skips');
    // A retrying run held the task from 0 s to 9 s: the newcomer of 5 s was rightly skipped.
    await row(t0, { attempt: 2, startedAt: new Date(t0 + 6_000), finishedAt: new Date(t0 + 9_000), workerId: 'w1' });
    await db.prisma.executionEvent.create({
      data: {
        executionId: (
          await db.prisma.taskExecution.findFirstOrThrow({ where: { taskName: 'skips', scheduledFor: new Date(t0) } })
        ).id,
        scheduledFor: new Date(t0),
        fromStatus: 'queued',
        toStatus: 'running',
        at: new Date(t0),
        detail: { attempt: 1 },
      },
    });
    await row(t0 + 5_000, { status: 'skipped', skipReason: 'overlap', finishedAt: new Date(t0 + 5_001) });
    // A retry skipped for overlap (it had started once).
    const retry = await row(t0 + 20_000, {
      status: 'skipped',
      skipReason: 'overlap',
      attempt: 1,
      startedAt: new Date(t0 + 20_000),
      finishedAt: new Date(t0 + 25_000),
    });
    // A slot that waited its turn behind a run that started after its time, then was skipped.
    await row(t0 + 30_000, {
      startedAt: new Date(t0 + 31_000),
      finishedAt: new Date(t0 + 40_000),
      workerId: 'w1',
      attempt: 1,
    });
    await row(t0 + 30_500, { status: 'skipped', skipReason: 'overlap', finishedAt: new Date(t0 + 37_000) });
    const verdict = await checkChaos(client, [], [], Date.now());
    const wrong = linesOf(verdict.wrongSkips, 'skips');
    expect(wrong).toHaveLength(2);
    expect(wrong[0]).toContain(`@ ${new Date(t0 + 20_000).toISOString()}: it had started`);
    expect(wrong[1]).toContain(
      `@ ${new Date(t0 + 30_500).toISOString()}: no other run of its task was in progress at its own time`,
    );
    expect(retry.id).toBeTruthy();
  });

  it("a due slot with no row is lost, whatever the task's missed_count says", async () => {
    const { task, row } = await taskWithRows('lost-slots');
    const from = Math.floor((Date.now() - 20_000) / 1000) * 1000;
    await db.prisma.auditLog.create({
      data: {
        actor: 'test',
        action: 'task.create',
        target: 'lost-slots',
        at: new Date(from - 500),
        after: { schedule: { cron: '* * * * * *' }, status: 'active' },
      },
    });
    for (let at = from; at < from + 10_000; at += 1000) if (at !== from + 4_000) await row(at);
    // An old counter of missed slots from before must not excuse a slot lost now.
    await db.prisma.task.update({ where: { id: task.id }, data: { missedCount: 1_000 } });
    const verdict = await checkChaos(client, [], [], from + 9_500);
    expect(linesOf(verdict.lost, 'lost-slots')).toEqual(['lost-slots: 1 slot(s)']);
  });

  it('counts every call of the webhook: one beyond the attempts, or two at once, ran twice; an early start or call is early', async () => {
    const t0 = Date.now() - 30_000;
    const { row } = await taskWithRows('calls');
    const once = await row(t0, { attempt: 1, startedAt: new Date(t0), finishedAt: new Date(t0 + 100) });
    const failedThenAgain = await row(t0 + 1_000, {
      attempt: 1,
      startedAt: new Date(t0 + 1_000),
      finishedAt: new Date(t0 + 1_100),
    });
    const concurrent = await row(t0 + 2_000, {
      attempt: 2,
      startedAt: new Date(t0 + 2_500),
      finishedAt: new Date(t0 + 3_000),
    });
    const earlyStart = await row(t0 + 3_000, {
      fireAt: new Date(t0 + 3_500),
      attempt: 1,
      startedAt: new Date(t0 + 3_200),
      finishedAt: new Date(t0 + 3_300),
    });
    const earlyCall = await row(t0 + 4_000, {
      attempt: 1,
      startedAt: new Date(t0 + 4_000),
      finishedAt: new Date(t0 + 4_300),
    });
    const verdict = await checkChaos(
      client,
      [
        call(once.id, t0 + 10, t0 + 20),
        // A failed call answered 500, then another with no attempt of its own.
        call(failedThenAgain.id, t0 + 1_010, t0 + 1_020, 500),
        call(failedThenAgain.id, t0 + 1_050, t0 + 1_060),
        // Two attempts, but the second called while the first call was still open.
        call(concurrent.id, t0 + 2_010, t0 + 2_800, 500),
        call(concurrent.id, t0 + 2_510, t0 + 2_600),
        call(earlyStart.id, t0 + 3_210, t0 + 3_220),
        call(earlyCall.id, t0 + 3_900, t0 + 3_950),
      ],
      [],
      Date.now(),
    );
    const duplicates = verdict.duplicates.filter((d) =>
      [once, failedThenAgain, concurrent].some((r) => d.startsWith(r.id)),
    );
    expect(new Set(duplicates.map((d) => d.slice(0, 36)))).toEqual(new Set([failedThenAgain.id, concurrent.id]));
    expect(verdict.duplicates.find((d) => d.startsWith(failedThenAgain.id))).toContain('2 calls, 1 attempt(s)');
    expect(verdict.duplicates.find((d) => d.startsWith(concurrent.id))).toContain(
      'while the previous one was still open',
    );
    const early = verdict.early.filter((e) => [earlyStart.id, earlyCall.id].some((id) => e.startsWith(id)));
    expect(early.map((e) => e.slice(0, 36)).sort()).toEqual([earlyStart.id, earlyStart.id, earlyCall.id].sort());
  });
});
