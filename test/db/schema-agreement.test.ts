import { randomUUID } from 'node:crypto';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

/**
 * schema.prisma and the hand-written SQL must agree: every model is written with every field set
 * and read back through the generated client. A column missing, misnamed or mistyped fails here.
 */
describe('schema.prisma agrees with the migrated database', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  it('writes and reads back every field of every model', async () => {
    const now = new Date('2026-01-02T03:04:05.678Z');
    const later = new Date('2026-01-03T03:04:05.678Z');
    const task = {
      name: 'agreement',
      description: 'd',
      handler: 'noop',
      payload: { a: [1, 'two', { three: null }] },
      secretFields: ['token'],
      scheduleKind: 'cron' as const,
      cron: '0 9 * * *',
      rrule: 'RRULE:FREQ=DAILY',
      runAt: now,
      everyMs: 9_007_199_254_740_991n,
      timezone: 'Europe/Berlin',
      startAt: now,
      endAt: later,
      jitterMs: 5,
      dstGap: 'end' as const,
      dstOverlap: 'both' as const,
      overlap: 'buffer_one' as const,
      misfire: 'run_all' as const,
      maxDelayMs: 1,
      maxAttempts: 2,
      backoffMs: 3,
      backoffMaxMs: 4,
      timeoutMs: 6,
      concurrencyKey: 'openai',
      concurrencyLimit: 3,
      rateKey: 'twitter:acct-42',
      rateLimit: 5,
      ratePerMs: 1000,
      notifyUrl: 'https://example.com',
      notifyOn: ['succeeded', 'failed'],
      labels: { team: 'billing' },
      managedBy: 'punctual-apply',
      exclude: ['us-holidays'],
      calendars: [
        {
          name: 'us-holidays',
          version: 2,
          updatedAt: '2026-01-02T03:04:05.678Z',
          timezone: null,
          dates: ['2026-12-25'],
          rrules: [],
        },
      ],
      sloStartWithinMs: 60_000,
      secret: 's',
      status: 'paused' as const,
      pauseNote: 'vendor outage',
      pauseAfterFailures: 5,
      pauseAfterWithinMs: 3_600_000,
      remainingRuns: 12,
      nextRunAt: now,
      lastScheduledFor: now,
      missedCount: 12n,
      version: 7,
      planVersion: 5,
      lastError: 'cannot compute slots',
      lastErrorAt: later,
      createdAt: now,
      updatedAt: later,
    };
    const written = await db.prisma.task.create({ data: task });
    expect(await db.prisma.task.findUniqueOrThrow({ where: { id: written.id } })).toEqual({
      ...task,
      id: written.id,
      namespace: 'default', // generated from the name
    });

    // Executions are partitioned by slot, their ids carry it (and a slot this old needs its partition made).
    await db.partitions.ensureCovered([now], 86_400_000);
    const execution = {
      id: executionIdFor(now),
      taskId: written.id,
      taskName: 'agreement',
      scheduledFor: now,
      fireAt: later,
      trigger: 'backfill' as const,
      status: 'dead' as const,
      skipReason: 'dst' as const,
      attempt: 3,
      attemptId: randomUUID(),
      taskVersion: 7,
      exclusive: false,
      workerId: 'w',
      queuedAt: now,
      startedAt: now,
      heartbeatAt: now,
      leaseUntil: later,
      finishedAt: later,
      nextAttemptAt: later,
      error: 'e',
      result: { ok: true },
      payload: { override: 1 },
      pinnedDefinition: { handler: 'http', timeoutMs: 1000 },
      concurrencyKey: 'openai',
      rateKey: 'twitter:acct-42',
      heldAt: now,
      quotaNamespace: 'default',
      flowWaitedMs: 1_500,
      parkedAt: later,
      waitedOn: true,
      coversFrom: now,
      createdAt: now,
    };
    await db.prisma.taskExecution.create({ data: execution });
    expect(await db.prisma.taskExecution.findFirstOrThrow({ where: { id: execution.id } })).toEqual({
      ...execution,
      namespace: 'default',
    });

    const event = await db.prisma.executionEvent.create({
      data: {
        executionId: execution.id,
        scheduledFor: execution.scheduledFor,
        fromStatus: 'running',
        toStatus: 'dead',
        at: now,
        workerId: 'w',
        detail: { x: 1 },
      },
    });
    expect(
      await db.prisma.executionEvent.findUniqueOrThrow({
        where: { id_scheduledFor: { id: event.id, scheduledFor: execution.scheduledFor } },
      }),
    ).toMatchObject({
      executionId: execution.id,
      scheduledFor: now,
      fromStatus: 'running',
      toStatus: 'dead',
      at: now,
      workerId: 'w',
      detail: { x: 1 },
    });

    const state = await db.prisma.schedulerState.update({
      where: { id: 1 },
      data: { epoch: 5n, shards: 4, leaderId: 'l', acquiredAt: now, heartbeatAt: later },
    });
    expect(state).toEqual({ id: 1, epoch: 5n, shards: 4, leaderId: 'l', acquiredAt: now, heartbeatAt: later });
    // One row per shard (id = shard + 1, at most 256 shards); only row 1 carries the shard count.
    expect(await db.prisma.schedulerState.create({ data: { id: 2 } })).toMatchObject({
      id: 2,
      epoch: 0n,
      shards: null,
    });
    await expect(db.prisma.schedulerState.create({ data: { id: 0 } })).rejects.toThrow();
    await expect(db.prisma.schedulerState.create({ data: { id: 257 } })).rejects.toThrow();
    await expect(db.prisma.schedulerState.update({ where: { id: 2 }, data: { shards: 4 } })).rejects.toThrow();

    const start = await db.prisma.flowStart.create({
      data: { key: 'twitter:acct-42', at: now, executionId: execution.id },
    });
    expect(await db.prisma.flowStart.findUniqueOrThrow({ where: { id: start.id } })).toEqual({
      id: start.id,
      key: 'twitter:acct-42',
      at: now,
      executionId: execution.id,
    });
    // A key and its limit come together, within bounds.
    await expect(
      db.prisma.task.update({ where: { id: written.id }, data: { concurrencyLimit: null } }),
    ).rejects.toThrow();
    await expect(db.prisma.task.update({ where: { id: written.id }, data: { ratePerMs: 50 } })).rejects.toThrow();

    const calendar = {
      name: 'us-holidays',
      description: 'd',
      timezone: 'America/New_York',
      dates: ['2026-12-25'],
      rrules: ['FREQ=WEEKLY;BYDAY=SA,SU'],
      version: 2,
      managedBy: 'punctual-apply',
      createdAt: now,
      updatedAt: later,
    };
    await db.prisma.calendar.create({ data: calendar });
    expect(await db.prisma.calendar.findUniqueOrThrow({ where: { name: 'us-holidays' } })).toEqual({
      ...calendar,
      namespace: 'default',
    });
    await expect(db.prisma.calendar.create({ data: { ...calendar, name: 'Not A Name' } })).rejects.toThrow();
    await expect(db.prisma.task.update({ where: { id: written.id }, data: { sloStartWithinMs: 0 } })).rejects.toThrow();

    const outbox = {
      topic: 'execution.dead',
      payload: { id: 1 },
      availableAt: now,
      attempts: 2,
      lastError: 'x',
      deliveredAt: later,
      createdAt: now,
    };
    const version = {
      taskName: 'agreement',
      version: 7,
      taskId: written.id,
      action: 'task.update',
      definition: { name: 'agreement', payload: { token: 't' } },
      changedAt: now,
      changedBy: 'pk_abc',
      reason: 'why',
    };
    await db.prisma.taskVersion.create({ data: version });
    expect(
      await db.prisma.taskVersion.findUniqueOrThrow({
        where: { taskName_version: { taskName: 'agreement', version: 7 } },
      }),
    ).toEqual(version);
    await expect(db.prisma.taskVersion.create({ data: version })).rejects.toThrow();

    const o = await db.prisma.outbox.create({ data: outbox });
    expect(await db.prisma.outbox.findUniqueOrThrow({ where: { id: o.id } })).toEqual({ ...outbox, id: o.id });

    const key = {
      name: 'k',
      prefix: 'pk_abc',
      hash: 'h',
      role: 'operator' as const,
      namespaces: ['team-x'],
      createdAt: now,
      lastUsedAt: later,
      revokedAt: later,
    };
    const k = await db.prisma.apiKey.create({ data: key });
    expect(await db.prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } })).toEqual({ ...key, id: k.id });

    const audit = {
      actor: 'pk_abc',
      action: 'task.create',
      target: 'agreement',
      before: undefined,
      after: { a: 1 },
      at: now,
    };
    const a = await db.prisma.auditLog.create({ data: audit });
    expect(await db.prisma.auditLog.findUniqueOrThrow({ where: { id: a.id } })).toMatchObject({
      actor: 'pk_abc',
      namespace: 'default',
      after: { a: 1 },
      before: null,
      at: now,
    });

    // A namespace; a task's, a calendar's and an audit entry's namespace is read from its key.
    const namespace = {
      name: 'team-x',
      description: 'd',
      maxTasks: 10,
      maxRunsPerMinute: 600,
      maxConcurrentRuns: 20,
      historyRetentionMs: 7_200_000n,
      deadLetterRetentionMs: 86_400_000n,
      createdAt: now,
      updatedAt: later,
    };
    await db.prisma.namespace.create({ data: namespace });
    expect(await db.prisma.namespace.findUniqueOrThrow({ where: { name: 'team-x' } })).toEqual(namespace);
    const inX = await db.prisma.task.create({ data: { ...task, name: 'team-x/agreement' } });
    expect(inX.namespace).toBe('team-x');
    expect((await db.prisma.calendar.create({ data: { ...calendar, name: 'team-x/us-holidays' } })).namespace).toBe(
      'team-x',
    );
    const entry = await db.prisma.auditLog.create({ data: { ...audit, target: 'team-x/agreement' } });
    expect((await db.prisma.auditLog.findUniqueOrThrow({ where: { id: entry.id } })).namespace).toBe('team-x');
    const cluster = await db.prisma.auditLog.create({ data: { ...audit, action: 'api_key.create', target: 'pk_x' } });
    expect((await db.prisma.auditLog.findUniqueOrThrow({ where: { id: cluster.id } })).namespace).toBeNull();
    // A task or a calendar only in a namespace that exists; a namespace holding one is not deleted.
    await expect(db.prisma.task.create({ data: { ...task, name: 'nowhere/agreement' } })).rejects.toThrow();
    await expect(db.prisma.calendar.create({ data: { ...calendar, name: 'nowhere/h' } })).rejects.toThrow();
    await expect(db.prisma.namespace.delete({ where: { name: 'team-x' } })).rejects.toThrow();
    await expect(db.prisma.namespace.create({ data: { name: 'Bad_Name' } })).rejects.toThrow();
    await expect(db.prisma.namespace.create({ data: { name: 'negative', maxTasks: -1 } })).rejects.toThrow();
    await expect(db.prisma.namespace.create({ data: { name: 'negative', maxRunsPerMinute: -1 } })).rejects.toThrow();
    await expect(db.prisma.namespace.create({ data: { name: 'negative', maxConcurrentRuns: -1 } })).rejects.toThrow();
    // No retention under an hour.
    await expect(
      db.prisma.namespace.create({ data: { name: 'short', historyRetentionMs: 60_000n } }),
    ).rejects.toThrow();
    await expect(
      db.prisma.namespace.create({ data: { name: 'short', deadLetterRetentionMs: 60_000n } }),
    ).rejects.toThrow();
    const quotaStart = await db.prisma.quotaStart.create({
      data: { namespace: 'team-x', at: now, executionId: execution.id },
    });
    expect(await db.prisma.quotaStart.findUniqueOrThrow({ where: { id: quotaStart.id } })).toEqual({
      id: quotaStart.id,
      namespace: 'team-x',
      at: now,
      executionId: execution.id,
    });
    await db.prisma.task.delete({ where: { id: inX.id } });

    // The live horizon (one row), the overlap guard, and what pruning kept of a task's history.
    expect(await db.prisma.historyHorizon.findUniqueOrThrow({ where: { id: 1 } })).toMatchObject({ id: 1 });
    await expect(db.prisma.historyHorizon.create({ data: { id: 2 } })).rejects.toThrow();
    const guard = { taskId: written.id, executionId: execution.id, takenFrom: null };
    await db.prisma.taskRunGuard.create({ data: guard });
    expect(await db.prisma.taskRunGuard.findUniqueOrThrow({ where: { taskId: written.id } })).toEqual(guard);
    const kept = {
      taskId: written.id,
      lastSuccessSlot: now,
      lastSuccessAt: later,
      failuresSinceSuccess: 2,
      lastFinishedSlot: later,
      lastFinishedOk: false,
      lastSlot: later,
      lastExecution: { id: execution.id },
      prunedThrough: later,
    };
    await db.prisma.taskHistory.create({ data: kept });
    expect(await db.prisma.taskHistory.findUniqueOrThrow({ where: { taskId: written.id } })).toEqual(kept);

    // Deleting a task keeps its history: the execution's task_id becomes NULL, its name stays.
    await db.prisma.task.delete({ where: { id: written.id } });
    expect(await db.prisma.taskExecution.findFirstOrThrow({ where: { id: execution.id } })).toMatchObject({
      taskId: null,
      taskName: 'agreement',
    });
  });

  it('has the guards the design relies on', async () => {
    const task = await db.prisma.task.create({
      data: { name: 'guards', handler: 'noop', scheduleKind: 'cron', cron: '* * * * *', secret: 's' },
    });
    const slot = new Date();
    const row = { taskId: task.id, taskName: task.name, scheduledFor: slot, fireAt: slot, taskVersion: 1 };
    await db.prisma.taskExecution.create({ data: { id: executionIdFor(slot), ...row } });
    // UNIQUE (task_id, scheduled_for): the idempotency guard, across partitions (the slot is the partition key).
    await expect(db.prisma.taskExecution.create({ data: { id: executionIdFor(slot), ...row } })).rejects.toThrow();
    // An id that carries a slot carries its own: a row whose id names another slot is refused (a read
    // by id would look in the wrong partition). An id of another kind is looked for everywhere.
    const other = new Date(slot.getTime() + 1);
    await db.prisma.taskExecution.create({ data: { id: randomUUID(), ...row, scheduledFor: other } });
    await expect(
      db.prisma.taskExecution.create({ data: { id: executionIdFor(slot), ...row, scheduledFor: other } }),
    ).rejects.toThrow();
    // The two history tables are partitioned by slot; the overlap guard spans every partition in a table of its own.
    const partitioned = await db.prisma.$queryRaw<{ relname: string }[]>`
      SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid ORDER BY 1`;
    expect(partitioned.map((r) => r.relname)).toEqual(['execution_event', 'task_execution']);
    const indexes = await db.prisma.$queryRaw<
      { indexname: string }[]
    >`SELECT indexname FROM pg_indexes WHERE tablename IN ('task', 'task_execution', 'outbox', 'task_run_guard')`;
    expect(indexes.map((i) => i.indexname)).toEqual(
      expect.arrayContaining([
        'task_next_run_active_idx',
        'task_run_guard_pkey',
        'task_execution_waiting_idx',
        'outbox_pending_idx',
      ]),
    );
  });

  it('has exactly the indexes schema.prisma declares, plus the partial ones only SQL can express', async () => {
    const schema = readFileSync(fileURLToPath(new URL('../../prisma/schema.prisma', import.meta.url)), 'utf8');
    const declared = [...schema.matchAll(/@@(?:index|unique)\(.*map: "([^"]+)"\)/g)].map((m) => m[1]);
    // `@unique` on a field: Prisma names the index <table>_<column>_key.
    declared.push('task_name_key', 'api_key_prefix_key');
    const sqlOnly = [
      'task_next_run_active_idx',
      'task_execution_pending_idx',
      'task_execution_retrying_idx',
      'task_execution_waiting_idx',
      'task_execution_running_idx',
      'task_execution_dead_idx',
      'task_execution_orphan_idx',
      'task_one_off_due_idx',
      'outbox_pending_idx',
      'task_managed_by_idx',
      'task_execution_concurrency_running_idx',
      'task_execution_concurrency_held_idx',
      'task_execution_rate_held_idx',
      'task_execution_namespace_running_idx',
      'task_execution_quota_held_idx',
      'task_execution_parked_idx',
      'task_bare_name_trgm_idx',
    ];
    const rows = await db.prisma.$queryRaw<{ indexname: string }[]>`
      SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename <> '_prisma_migrations' AND indexname NOT LIKE '%_pkey'
        -- A partition's indexes are the partitioned table's, attached: the table's are the ones declared.
        AND tablename NOT IN (SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid)`;
    expect(rows.map((r) => r.indexname).sort()).toEqual([...declared, ...sqlOnly].sort());
  });
});
