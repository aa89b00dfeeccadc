import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { quotaFlowKey } from '../../libs/planning/src/index.js';
import { openRepositories } from '../support/repositories.js';

/**
 * Flow control's claim against real Postgres (DESIGN §5): the permits of a concurrency key are its
 * runs under a live lease, a rate key's window its recent starts; a run held back is marked on its
 * row, keeps its place, and is never judged late for the wait.
 */
describe('claiming under flow control', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let n = 0;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  /** A task with these flow columns and `count` executions due (fire_at `agoMs` back, 1 ms apart, in order). */
  async function due(
    flow: {
      name?: string;
      concurrencyKey?: string;
      concurrencyLimit?: number;
      rateKey?: string;
      rateLimit?: number;
      ratePerMs?: number;
    },
    count: number,
    agoMs = 1_000,
    maxDelayMs = 3_600_000,
  ) {
    n += 1;
    const { name: prefix, ...columns } = flow;
    const name = prefix ? `${prefix}-${n}` : `flow-${n}`;
    const task = await db.prisma.task.create({
      data: {
        name,
        handler: 'noop',
        scheduleKind: 'cron',
        cron: '* * * * *',
        secret: 's',
        overlap: 'allow',
        maxDelayMs,
        ...columns,
      },
    });
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const id = randomUUID();
      const at = new Date(Date.now() - agoMs + i);
      await db.prisma.taskExecution.create({
        data: {
          id,
          taskId: task.id,
          taskName: name,
          scheduledFor: at,
          fireAt: at,
          taskVersion: 1,
          status: 'queued',
          exclusive: false,
        },
      });
      ids.push(id);
    }
    return ids;
  }
  const claim = (id: string) => db.claim({ id, attemptId: randomUUID(), workerId: 'w1' });
  const row = (id: string) => db.prisma.taskExecution.findFirstOrThrow({ where: { id } });
  const finish = (id: string) =>
    db.prisma.taskExecution.updateMany({ where: { id }, data: { status: 'succeeded', finishedAt: new Date() } });

  it('a concurrency key: limit runs at once across its tasks, the next held (not late, its place kept) until one ends', async () => {
    const a = await due({ concurrencyKey: 'api', concurrencyLimit: 2 }, 2, 300, 1_000);
    const b = await due({ concurrencyKey: 'api', concurrencyLimit: 2 }, 1, 200, 1_000);
    // Claimed together, as two workers would: exactly two permits.
    const results = await Promise.all([...a, ...b].map(claim));
    expect(results.map((r) => r.kind).sort()).toEqual(['later', 'run', 'run']);
    const held = [...a, ...b][results.findIndex((r) => r.kind === 'later')]!;
    const waiting = results.find((r) => r.kind === 'later')!;
    expect(waiting).toMatchObject({ kind: 'later', why: 'held', waitsFor: { flowKey: 'api' } });
    expect(await row(held)).toMatchObject({ status: 'queued', concurrencyKey: 'api' });
    expect((await row(held)).heldAt).not.toBeNull();
    // Held for 10 s, far past fire_at + maxDelay (1 s): still not late — the leader's misfire pass skips it too.
    await db.prisma
      .$executeRaw`UPDATE task_execution SET fire_at = fire_at - interval '10 s', scheduled_for = scheduled_for - interval '10 s' WHERE id = ${held}::uuid`;
    expect((await claim(held)).kind).toBe('later');
    const [unheld] = await due({ concurrencyKey: 'api', concurrencyLimit: 2 }, 1, 5_000, 1_000);
    await db.state.adoptShardCount(1);
    const epoch = await db.state.bumpEpoch('test');
    const late = (await db.leader.listLateUnstarted(100, epoch)).map((l) => l.id);
    expect(late).toContain(unheld);
    expect(late).not.toContain(held);
    await finish(unheld!);

    const running = [...a, ...b].filter((id) => id !== held);
    await finish(running[0]!);
    const started = await claim(held);
    expect(started.kind).toBe('run');
    expect(await row(held)).toMatchObject({ status: 'running', concurrencyKey: 'api', heldAt: null });
  });

  it('a permit is bound to its lease: a run whose lease ran out (its worker died) holds none', async () => {
    const [first, second] = await due({ concurrencyKey: 'leased', concurrencyLimit: 1 }, 2);
    expect((await claim(first!)).kind).toBe('run');
    expect((await claim(second!)).kind).toBe('later');
    await db.prisma.taskExecution.updateMany({ where: { id: first! }, data: { leaseUntil: new Date(Date.now() - 1) } });
    expect((await claim(second!)).kind).toBe('run');
  });

  it('a cancelled run keeps its permit until its lease ends or its worker gives it back; a renewal never brings a dropped one back', async () => {
    const [first, second] = await due({ concurrencyKey: 'cancelled', concurrencyLimit: 1 }, 2);
    const started = await claim(first!);
    expect(started.kind).toBe('run');
    const attemptId = started.kind === 'run' ? started.execution.attemptId! : '';
    // Cancelled while its handler runs: the row ends, its permit stays (moved by the cancel itself).
    expect((await db.executions.cancel(first!, 'test'))?.fromStatus).toBe('running');
    const permits = await db.prisma.$queryRaw<
      { key: string; attempt_id: string }[]
    >`SELECT key, attempt_id::text FROM overrun_permit WHERE execution_id = ${first!}::uuid`;
    expect(permits).toEqual([{ key: 'cancelled', attempt_id: attemptId }]);
    expect((await claim(second!)).kind).toBe('later');
    // The handler settled: its worker gives the permit back, and a renewal already on its way does not restore it.
    await db.attempts.dropPermits([attemptId]);
    await db.attempts.renewPermits([attemptId], 30_000);
    expect(
      await db.prisma.$queryRaw<unknown[]>`SELECT 1 FROM overrun_permit WHERE attempt_id = ${attemptId}::uuid`,
    ).toEqual([]);
    expect((await claim(second!)).kind).toBe('run');
  });

  it('runs go in fire_at order within a key: a later run with room waits behind an earlier held one', async () => {
    const [one, two, three] = await due({ concurrencyKey: 'fifo', concurrencyLimit: 1 }, 3);
    expect((await claim(one!)).kind).toBe('run');
    expect((await claim(two!)).kind).toBe('later');
    await finish(one!);
    // Room again, but `two` was held first and is due: `three` waits behind it.
    expect(await claim(three!)).toMatchObject({ kind: 'later', why: 'held', waitsFor: { flowKey: 'fifo' } });
    expect((await claim(two!)).kind).toBe('run');
  });

  it('keys do not block each other, nor tasks without a key', async () => {
    const [busy, blocked] = await due({ concurrencyKey: 'busy', concurrencyLimit: 1 }, 2);
    expect((await claim(busy!)).kind).toBe('run');
    expect((await claim(blocked!)).kind).toBe('later');
    const [other] = await due({ concurrencyKey: 'other', concurrencyLimit: 1 }, 1);
    const [plain] = await due({}, 1);
    expect((await claim(other!)).kind).toBe('run');
    expect((await claim(plain!)).kind).toBe('run');
    expect((await row(plain!)).concurrencyKey).toBeNull();
  });

  it('a rate key: limit starts per window; the next is told when the window has room, the ones behind it later still', async () => {
    const ids = await due({ rateKey: 'mail', rateLimit: 2, ratePerMs: 60_000 }, 4);
    expect((await claim(ids[0]!)).kind).toBe('run');
    expect((await claim(ids[1]!)).kind).toBe('run');
    // Finished or not, the starts stay in the window.
    await finish(ids[0]!);
    const third = await claim(ids[2]!);
    expect(third).toMatchObject({ kind: 'later', why: 'held', waitsFor: { flowKey: 'mail' } });
    // About a minute from the first start (plus the window's small margin).
    expect(third.kind === 'later' && third.afterMs).toBeGreaterThan(55_000);
    expect(third.kind === 'later' && third.afterMs).toBeLessThan(61_000);
    const fourth = await claim(ids[3]!);
    // Behind the third: it may go when the second start leaves the window (a moment after the first).
    expect(fourth.kind === 'later' && fourth.afterMs).toBeGreaterThanOrEqual(
      third.kind === 'later' ? third.afterMs! - 50 : Infinity,
    );
    expect(fourth.kind === 'later' && fourth.afterMs).toBeLessThan(61_000);
    // The window moves on: once the first start is a minute old, the next goes.
    await db.prisma.$executeRaw`UPDATE flow_start SET at = at - interval '61 seconds' WHERE key = 'mail'`;
    expect((await claim(ids[2]!)).kind).toBe('run');
    const { count } = (
      await db.prisma.$queryRaw<{ count: number }[]>`SELECT count(*)::int AS count FROM flow_start WHERE key = 'mail'`
    )[0]!;
    expect(count).toBe(3);
  });

  it("a claim given back unspent takes its start back out of the rate key's window: the next run has its room", async () => {
    const ids = await due({ rateKey: 'relay', rateLimit: 1, ratePerMs: 60_000 }, 2);
    const attemptId = randomUUID();
    expect((await db.claim({ id: ids[0]!, attemptId, workerId: 'w1' })).kind).toBe('run');
    const starts = async () =>
      (
        await db.prisma.$queryRaw<
          { count: number }[]
        >`SELECT count(*)::int AS count FROM flow_start WHERE key = 'relay'`
      )[0]!.count;
    expect(await starts()).toBe(1);
    expect((await claim(ids[1]!)).kind).toBe('later');
    // The claim's answer came too late to run it (its connection lost): given back, its handler never started.
    expect(await db.claims.giveBack(ids[0]!, attemptId, 'the claim was confirmed too late')).toBe(true);
    expect(await starts()).toBe(0);
    expect((await claim(ids[1]!)).kind).toBe('run');
    expect(await starts()).toBe(1);
  });

  it("a claim given back unspent takes its start back out of its namespace's minute (maxRunsPerMinute)", async () => {
    await db.prisma.namespace.create({ data: { name: 'team-g', maxRunsPerMinute: 1 } });
    const ids = await due({ name: 'team-g/a' }, 2, 400);
    const attemptId = randomUUID();
    expect((await db.claim({ id: ids[0]!, attemptId, workerId: 'w1' })).kind).toBe('run');
    const starts = () => db.prisma.quotaStart.count({ where: { namespace: 'team-g' } });
    expect(await starts()).toBe(1);
    expect((await claim(ids[1]!)).kind).toBe('later');
    expect(await db.claims.giveBack(ids[0]!, attemptId, 'the claim was confirmed too late')).toBe(true);
    expect(await starts()).toBe(0);
    expect((await claim(ids[1]!)).kind).toBe('run');
  });

  it('lists the busiest keys with their runs in progress and held back', async () => {
    const loads = await db.flow.busiestKeys(20);
    const byKey = Object.fromEntries(loads.map((l) => [l.key, l]));
    expect(byKey.busy).toMatchObject({ running: 1, waiting: 1 });
    expect(byKey.mail).toMatchObject({ waiting: 1 });
    // Most waiting first.
    expect(loads[0]!.waiting).toBeGreaterThanOrEqual(loads.at(-1)!.waiting);
    const named = await db.flow.busiestKeys(0, ['other']);
    expect(named.map((l) => l.key)).toEqual(['other']);
  });

  it("a namespace's maxConcurrentRuns: its runs of every task (keyed or not) share it, the next held on the quota until one ends; another namespace is untouched", async () => {
    await db.prisma.namespace.create({ data: { name: 'team-q', maxConcurrentRuns: 2 } });
    const plain = await due({ name: 'team-q/plain' }, 2, 300);
    const [keyed] = await due({ name: 'team-q/keyed', concurrencyKey: 'k', concurrencyLimit: 5 }, 1, 200);
    const [elsewhere] = await due({}, 1, 200);
    // Two claimed together, as two workers would; then the keyed task's, over the quota though its own key has room.
    const results = [...(await Promise.all(plain.map(claim))), await claim(keyed!), await claim(elsewhere!)];
    expect(results.map((r) => r.kind)).toEqual(['run', 'run', 'later', 'run']);
    expect(results[2]).toMatchObject({ why: 'held', waitsFor: { flowKey: quotaFlowKey('team-q') } });
    // Held on the quota, in its place; the runs started under it carry the namespace (their permits).
    expect(await row(keyed!)).toMatchObject({ status: 'queued', quotaNamespace: 'team-q', concurrencyKey: 'team-q/k' });
    for (const id of plain) expect(await row(id)).toMatchObject({ status: 'running', quotaNamespace: 'team-q' });
    expect(await row(elsewhere!)).toMatchObject({ status: 'running', quotaNamespace: null });
    expect((await db.namespaces.get('team-q'))!.running).toBe(2);

    await finish(plain[0]!);
    expect((await claim(keyed!)).kind).toBe('run');
    expect(await row(keyed!)).toMatchObject({ status: 'running', quotaNamespace: 'team-q', heldAt: null });
  });

  it("a namespace's maxRunsPerMinute: starts in the last minute counted across its tasks; the next is told when the oldest leaves the minute", async () => {
    await db.prisma.namespace.create({ data: { name: 'team-r', maxRunsPerMinute: 3 } });
    const ids = [...(await due({ name: 'team-r/a' }, 2, 400)), ...(await due({ name: 'team-r/b' }, 2, 300))];
    const results = [];
    for (const id of ids) results.push(await claim(id));
    expect(results.map((r) => r.kind)).toEqual(['run', 'run', 'run', 'later']);
    const held = results[3]!;
    expect(held).toMatchObject({ why: 'held', waitsFor: { flowKey: quotaFlowKey('team-r') } });
    // Told to ask again about when the first start is a minute old (not the poll of a held permit).
    expect(held.kind === 'later' && held.afterMs).toBeGreaterThan(55_000);
    expect(await db.prisma.quotaStart.count({ where: { namespace: 'team-r' } })).toBe(3);
    expect((await db.namespaces.get('team-r'))!.startsInMinute).toBe(3);
    // The quota lifted, the held run starts at once.
    await db.prisma.namespace.update({ where: { name: 'team-r' }, data: { maxRunsPerMinute: null } });
    expect((await claim(ids[3]!)).kind).toBe('run');
  });
});
