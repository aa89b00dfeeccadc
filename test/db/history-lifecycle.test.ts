import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { executionIdFor, slotOfExecutionId } from '../../libs/contract/src/index.js';
import { CLAIM_DIRECT, RAISE_LAG_MS } from '../../libs/db/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { HistoryKeeper } from '../../libs/scheduler/src/index.js';
import { HistoryPruneRepository } from '../../libs/db/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const utcDay = (at: number) => Math.floor(at / DAY) * DAY;

/**
 * The history lifecycle against a real Postgres (DESIGN §3): partitions made where slots need them,
 * the live horizon that the claim path's views carry, and a pass of the retention rules — whole days
 * dropped, days that keep dead letters compacted, task health kept — with no event left without its
 * execution.
 */
describe('history lifecycle', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let prune: HistoryPruneRepository;
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    prune = new HistoryPruneRepository(db.prisma);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => undefined);
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  const task = async (name: string, overlap: 'skip' | 'allow' = 'skip') =>
    db.prisma.task.create({
      data: { name, handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's', overlap },
    });

  /** Ended executions of `taskId` at these slots (each with one event: as a skip or a failure writes one). */
  async function ended(taskId: string, name: string, slots: number[], status: 'succeeded' | 'dead' | 'missed') {
    await db.partitions.ensureCovered(
      slots.map((s) => new Date(s)),
      DAY,
    );
    await db.prisma.$executeRaw`
      WITH made AS (
        INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, exclusive, started_at, finished_at)
        SELECT punctual_execution_id(s), ${taskId}::uuid, ${name}, s, s, ${status}::execution_status, 1, 1, true, s, s + interval '1 second'
        FROM unnest(${slots.map((s) => new Date(s).toISOString())}::timestamptz[]) AS u(s)
        RETURNING id, scheduled_for
      )
      INSERT INTO execution_event (execution_id, scheduled_for, from_status, to_status)
      SELECT id, scheduled_for, 'running', ${status}::execution_status FROM made`;
  }

  const partitionOf = async (at: number) =>
    (await db.partitions.list()).find((p) => (p.from?.getTime() ?? -Infinity) <= at && at < p.to.getTime());
  const countIn = async (sql: string) => Number((await db.prisma.$queryRawUnsafe<{ n: number }[]>(sql))[0]!.n);

  it('makes ids that carry their slot alike in TypeScript and in SQL, to the millisecond the column keeps', async () => {
    const slots = [
      '2026-12-02T09:00:00.000Z',
      '2026-12-02T09:00:00.0004Z',
      '2026-12-02T09:00:00.0006Z',
      '2030-01-01T00:00:00.999Z',
    ];
    const rows = await db.prisma.$queryRaw<{ at: Date; sql_id: string; kept: Date }[]>`
      SELECT s AS at, punctual_execution_id(s)::text AS sql_id, s::timestamptz(3) AS kept FROM unnest(${slots}::timestamptz[]) s`;
    for (const row of rows) {
      expect(slotOfExecutionId(row.sql_id)).toEqual(row.kept);
      const [back] = await db.prisma.$queryRaw<{ slot: Date }[]>`
        SELECT punctual_slot_of(${executionIdFor(row.kept)}::uuid) AS slot`;
      expect(back!.slot).toEqual(row.kept);
    }
    const [none] = await db.prisma.$queryRaw<
      { slot: Date | null }[]
    >`SELECT punctual_slot_of(${randomUUID()}::uuid) AS slot`;
    expect(none!.slot).toBeNull();
  });

  it('makes a partition for a slot that has none, fitted to the day, and a twin for its events', async () => {
    const at = Date.now() - 50 * DAY + 5 * HOUR;
    expect(await partitionOf(at)).toBeUndefined();
    await Promise.all([
      db.partitions.ensureCovered([new Date(at)], DAY),
      db.partitions.ensureCovered([new Date(at)], DAY),
    ]);
    const p = (await partitionOf(at))!;
    expect(p.from!.getTime()).toBe(utcDay(at));
    expect(p.to.getTime()).toBe(utcDay(at) + DAY);
    expect(p.events).toBe(p.executions.replace('task_execution', 'execution_event'));
    expect(await countIn(`SELECT count(*)::int AS n FROM pg_class WHERE relname = '${p.events}'`)).toBe(1);
  });

  it('raises the live horizon past partitions with nothing live, lowers it for an old slot made live, and the views follow', async () => {
    const { id: taskId, name } = await task('horizon');
    const old = utcDay(Date.now()) - 20 * DAY + HOUR;
    await ended(taskId, name, [old], 'succeeded');
    // A prepared statement on the view (as the claim path's are): planned again whenever the view is.
    const client = new pg.Client({ connectionString: sandbox.databaseUrl });
    await client.connect();
    clients.push(client);
    const live = async () =>
      Number(
        (
          await client.query({
            name: 'live',
            text: 'SELECT count(*)::int AS n FROM live_execution WHERE task_id = $1',
            values: [taskId],
          })
        ).rows[0].n,
      );
    expect(await live()).toBe(1); // from the beginning: every row may be live

    const raised = await db.horizon.raise();
    const cap = (await partitionOf(Date.now() - RAISE_LAG_MS))!;
    expect(raised).toEqual(cap.from);
    expect(await live()).toBe(0);

    // A backfill of an old slot: no room below the horizon until it is lowered, which the transaction
    // cannot do itself; withRoom makes the room and writes it.
    const slot = new Date(old + 60_000);
    const row = {
      id: executionIdFor(slot),
      taskId,
      taskName: name,
      scheduledFor: slot,
      fireAt: new Date(),
      trigger: 'backfill' as const,
      status: 'scheduled' as const,
      taskVersion: 1,
      exclusive: true,
    };
    await expect(db.prisma.$transaction((tx) => db.executions.insertPlanned([row], tx))).rejects.toThrow(/no room/);
    await db.room.withRoom(() => db.prisma.$transaction((tx) => db.executions.insertPlanned([row], tx)));
    expect(await db.horizon.liveFrom()).toEqual((await partitionOf(old))!.from);
    expect(await live()).toBe(2);
    // The horizon stays below a live row, and passes it once it has ended.
    expect(await db.horizon.raise()).toEqual((await partitionOf(old))!.from);
    await db.prisma.taskExecution.updateMany({ where: { id: row.id }, data: { status: 'succeeded' } });
    expect(await db.horizon.raise()).toEqual(cap.from);
    expect(await live()).toBe(0);
  });

  it('a raise waits for a writer that holds the horizon, and then sees its row', async () => {
    const { id: taskId, name } = await task('held');
    await db.horizon.raise();
    const slot = new Date(utcDay(Date.now()) - 3 * DAY + HOUR);
    await db.room.makeRoom([slot]);
    const from = await db.horizon.liveFrom();
    expect(from).toEqual((await partitionOf(slot.getTime()))!.from);
    let raised: Date | null | undefined;
    await db.prisma.$transaction(async (tx) => {
      await db.room.check(tx, [slot]);
      const raising = db.horizon.raise().then((r) => {
        raised = r;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(raised).toBeUndefined(); // waiting for the share lock this transaction holds
      await tx.$executeRaw`
        INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, task_version)
        VALUES (${executionIdFor(slot)}::uuid, ${taskId}::uuid, ${name}, ${slot.toISOString()}::timestamptz, now(), 'scheduled', 1)`;
      void raising;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(raised).toEqual(from);
  });

  it('two exclusive claims of one task whose slots are in different partitions: one starts, the other finds the guard taken', async () => {
    const { id: taskId, name } = await task('guarded');
    const yesterday = new Date(utcDay(Date.now()) - 60_000);
    const today = new Date(utcDay(Date.now()) + 1000);
    const [a, b] = [executionIdFor(yesterday), executionIdFor(today)];
    await db.room.makeRoom([yesterday, today]);
    // Two slots between attempts (a replayed dead letter beside a retry): each may start, alone.
    for (const [id, slot] of [
      [a, yesterday],
      [b, today],
    ] as const) {
      await db.prisma.$executeRaw`
        INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, status, attempt, task_version, next_attempt_at)
        VALUES (${id}::uuid, ${taskId}::uuid, ${name}, ${slot.toISOString()}::timestamptz, ${slot.toISOString()}::timestamptz, 'retrying', 1, 1, now() - interval '1 second')`;
    }
    expect(
      (await db.partitions.list()).filter((p) => [yesterday, today].some((s) => p.from! <= s && s < p.to)),
    ).toHaveLength(2);
    const values = (id: string) => [[id], [randomUUID()], [null], [0], ['w'], 30_000, ['noop']];
    const first = new pg.Client({ connectionString: sandbox.databaseUrl });
    const second = new pg.Client({ connectionString: sandbox.databaseUrl });
    await Promise.all([first.connect(), second.connect()]);
    clients.push(first, second);
    await first.query('BEGIN');
    expect((await first.query(CLAIM_DIRECT, values(a))).rows).toHaveLength(1);
    let answered = false;
    const other = second.query(CLAIM_DIRECT, values(b)).then((r) => {
      answered = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false); // waits on the guard the first claim took, uncommitted
    await first.query('COMMIT');
    expect((await other).rows).toHaveLength(0);
    const rows = await db.prisma.taskExecution.findMany({ where: { taskId }, orderBy: { scheduledFor: 'asc' } });
    expect(rows.map((r) => r.status)).toEqual(['running', 'retrying']);
    expect(await db.prisma.taskRunGuard.findUnique({ where: { taskId } })).toMatchObject({ executionId: a });
  });

  it('a pass drops days past every retention, compacts a day that keeps dead letters, keeps task health, leaves no event behind', async () => {
    await db.horizon.raise();
    const { id: taskId, name } = await task('pruned');
    const { id: longId } = await db.prisma.namespace
      .create({ data: { name: 'keeps-long', historyRetentionMs: BigInt(60 * DAY) } })
      .then(() =>
        db.prisma.task.create({
          data: { name: 'keeps-long/report', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
        }),
      );
    const today = utcDay(Date.now());
    const at = (daysAgo: number, minute: number) => today - daysAgo * DAY + 3 * HOUR + minute * 60_000;
    const minutes = (daysAgo: number, n: number) => Array.from({ length: n }, (_, i) => at(daysAgo, i));
    await ended(taskId, name, minutes(100, 50), 'succeeded'); // past 90 days: gone whole
    await ended(taskId, name, minutes(40, 200), 'succeeded'); // past 30 days: gone...
    await ended(taskId, name, [at(40, 300), at(40, 301)], 'dead'); // ...but its dead letters stay 90
    await ended(longId, 'keeps-long/report', [at(40, 400)], 'succeeded'); // a namespace that keeps 60 days
    await ended(taskId, name, minutes(10, 20), 'succeeded'); // kept
    await ended(taskId, name, [at(10, 30)], 'missed');
    const day100 = (await partitionOf(at(100, 0)))!;
    const day40 = (await partitionOf(at(40, 0)))!;
    const bytesBefore = await countIn(`SELECT pg_total_relation_size('${day40.executions}')::float8 AS n`);

    const keeper = new HistoryKeeper(sandbox.config(), db.partitions, db.horizon, prune, new Metrics());
    const report = await keeper.pass(new Date());
    expect(report.dropped).toEqual([day100.executions]);
    expect(report.compacted).toEqual([day40.executions]);
    expect(report.removed).toBe(50 + 200);

    expect(await partitionOf(at(100, 0))).toBeUndefined();
    expect(
      await countIn(
        `SELECT count(*)::int AS n FROM pg_class WHERE relname IN ('${day100.executions}', '${day100.events}')`,
      ),
    ).toBe(0);
    // The compacted day holds only what its rules keep, under its own name, in a fraction of the space.
    const kept = await db.prisma.taskExecution.findMany({
      where: { scheduledFor: { gte: day40.from!, lt: day40.to } },
      orderBy: { scheduledFor: 'asc' },
    });
    expect(kept.map((r) => [r.taskName, r.status])).toEqual([
      [name, 'dead'],
      [name, 'dead'],
      ['keeps-long/report', 'succeeded'],
    ]);
    expect((await partitionOf(at(40, 0)))!.executions).toBe(day40.executions);
    expect(await countIn(`SELECT pg_total_relation_size('${day40.executions}')::float8 AS n`)).toBeLessThan(
      bytesBefore,
    );
    // A kept dead letter is still found by id, with its event.
    const dead = (await db.queries.findById(kept[0]!.id))!;
    expect(dead.events.map((e) => e.toStatus)).toContain('dead');
    // The ten-day-old rows are untouched.
    expect(
      await db.prisma.taskExecution.count({
        where: { taskId, scheduledFor: { lt: new Date(today - 5 * DAY), gt: new Date(today - 20 * DAY) } },
      }),
    ).toBe(21);
    // No event outlives its execution.
    expect(
      await countIn(
        `SELECT count(*)::int AS n FROM execution_event ev WHERE NOT EXISTS (SELECT 1 FROM task_execution e WHERE e.id = ev.execution_id)`,
      ),
    ).toBe(0);
    // What health reads of the days that went: the last success among them, and the failures since.
    expect(await db.prisma.taskHistory.findUnique({ where: { taskId } })).toMatchObject({
      lastSuccessSlot: new Date(at(40, 199)),
      lastSuccessAt: new Date(at(40, 199) + 1000),
      failuresSinceSuccess: 0, // the dead letters after it stay: they are counted where they are
      lastSlot: new Date(at(40, 199)),
    });
    // A second pass at once finds nothing more to remove.
    expect((await keeper.pass(new Date())).removed).toBe(0);
  });

  it('prunes the tables beside the history by their own rules, in one pass', async () => {
    const ago = (days: number) => new Date(Date.now() - days * DAY);
    await db.prisma.outbox.createMany({
      data: [
        { topic: 'execution.dead', payload: {}, deliveredAt: ago(40), createdAt: ago(40) }, // delivered long ago: goes
        { topic: 'execution.dead', payload: {}, deliveredAt: ago(1), createdAt: ago(1) }, // delivered yesterday: stays
        { topic: 'execution.dead', payload: {}, deliveredAt: new Date(0), createdAt: ago(40) }, // given up long ago: goes
        { topic: 'execution.dead', payload: {}, deliveredAt: null, createdAt: ago(40) }, // not delivered: stays
      ],
    });
    await db.prisma.auditLog.createMany({
      data: [
        { actor: 'k', action: 'task.create', target: 'old-task', at: ago(400) }, // superseded, past AUDIT_RETENTION: goes
        { actor: 'k', action: 'task.update', target: 'old-task', at: ago(390) }, // the latest of its target: stays
        { actor: 'k', action: 'task.create', target: 'new-task', at: ago(2) },
      ],
    });
    await db.prisma.flowStart.createMany({
      data: [
        { key: 'idle-key', at: ago(3) },
        { key: 'busy-key', at: ago(3) },
        { key: 'busy-key', at: new Date() },
      ],
    });
    await db.prisma.quotaStart.createMany({
      data: [
        { namespace: 'default', at: ago(1) },
        { namespace: 'default', at: new Date() },
      ],
    });
    await db.prisma.overrunPermit.create({
      data: { attemptId: randomUUID(), key: 'k', executionId: randomUUID(), until: ago(1) },
    });
    const { id: versioned } = await task('versioned');
    const version = (v: number, daysAgo: number) => ({
      taskName: 'versioned',
      version: v,
      taskId: versioned,
      action: 'task.update',
      definition: {},
      changedAt: ago(daysAgo),
      changedBy: 'k',
    });
    await db.prisma.taskVersion.createMany({ data: [version(1, 400), version(2, 380), version(3, 1)] });
    const keeper = new HistoryKeeper(sandbox.config(), db.partitions, db.horizon, prune, new Metrics());
    const pruned = await prune.pruneTables((await keeper.rules()).cutoffs(new Date()));
    expect(pruned).toMatchObject({
      outbox: 2,
      audit_log: 1,
      task_version: 2,
      flow_start: 2,
      quota_start: 1,
      overrun_permit: 1,
    });
    // The version a task is at stays, however old: here a newer one is, and the two past a year went.
    expect((await db.prisma.taskVersion.findMany({ where: { taskName: 'versioned' } })).map((v) => v.version)).toEqual([
      3,
    ]);
    expect(await db.prisma.outbox.count()).toBe(2);
    expect((await db.prisma.auditLog.findMany({ where: { target: 'old-task' } })).map((e) => e.action)).toEqual([
      'task.update',
    ]);
    expect(await db.prisma.flowStart.count()).toBe(1);
    expect(await db.prisma.quotaStart.count()).toBe(1);
  });
});
