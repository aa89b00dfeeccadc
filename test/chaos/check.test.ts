import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkChaos } from '../../chaos/check.js';
import { sleep } from '../support/processes.js';
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
    const task = await db.prisma.task.create({ data: { name: 'checked', handler: 'http', scheduleKind: 'cron', cron: '* * * * *', secret: 's' } });
    const slot = (at: Date, data: Record<string, unknown> = {}) =>
      db.prisma.taskExecution.create({ data: { id: randomUUID(), taskId: task.id, taskName: task.name, scheduledFor: at, fireAt: at, taskVersion: 1, status: 'scheduled', exclusive: true, ...data } });

    // A runs on its first attempt; B comes while it runs and the claim finds the task busy: B is skipped for overlap.
    const a = await slot(new Date(Date.now() - 100));
    const attempt = randomUUID();
    expect((await db.claim({ id: a.id, attemptId: attempt, workerId: 'w1' })).kind).toBe('claimed');
    const b = await slot(new Date(Date.now() + 50));
    await sleep(300);
    expect(await db.claim({ id: b.id, attemptId: randomUUID(), workerId: 'w2' })).toEqual({ kind: 'skipped', reason: 'overlap' });
    expect(await db.attempts.markSucceededMany([{ id: a.id, attemptId: attempt, result: null }])).toEqual([true]);

    // C was skipped for overlap a minute later, with nothing running.
    const lonely = new Date(Date.now() + 60_000);
    await slot(lonely, { status: 'skipped', skipReason: 'overlap', finishedAt: new Date(lonely.getTime() + 10) });
    // D's success was recorded twice (stored history rows, as an older version wrote them).
    const d = await slot(new Date(Date.now() - 5_000), { status: 'succeeded', attempt: 1, startedAt: new Date(Date.now() - 4_990), finishedAt: new Date(), workerId: 'w1' });
    await db.prisma.executionEvent.createMany({ data: [1, 2].map(() => ({ executionId: d.id, fromStatus: 'running' as const, toStatus: 'succeeded' as const, workerId: 'w1' })) });
    // E started 1.5 s late.
    const eDue = Date.now() - 10_000;
    const e = await slot(new Date(eDue), { status: 'succeeded', attempt: 1, startedAt: new Date(eDue + 1_500), finishedAt: new Date(eDue + 1_600), workerId: 'w1' });

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
});
