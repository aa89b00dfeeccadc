import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ExecutionStatus, ExecutionTrigger } from '../../libs/db/src/index.js';
import { useApiSandbox } from '../support/api-sandbox.js';

const MINUTE = 60_000;

/**
 * DESIGN §4, "Edits never lose a slot": what an edit, a pause and a resume do to the executions a
 * task already has, right before a slot (the slot planned within the lookahead, not yet run).
 */
describe('edits, pauses and resumes around planned slots', () => {
  const ctx = useApiSandbox();

  /** A task every minute with the leader's work already done: its next slot planned (queued), the cursor past it. */
  async function plannedTask(name: string, body: Record<string, unknown> = {}) {
    // The planned slot is the next minute: it must not come while the test edits around it.
    const toNextMinute = MINUTE - (Date.now() % MINUTE);
    if (toNextMinute < 5_000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 100));
    const created = await ctx.api.call('POST', '/v1/tasks', {
      name,
      handler: 'noop',
      schedule: { cron: '* * * * *' },
      ...body,
    });
    expect(created.status).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
    const slot = task.nextRunAt!;
    const planned = await row(task.id, name, slot, 'queued', task.planVersion);
    await ctx.db.prisma.task.update({
      where: { id: task.id },
      data: { nextRunAt: new Date(slot.getTime() + MINUTE), lastScheduledFor: slot },
    });
    return { task, slot, planned };
  }

  async function row(
    taskId: string,
    taskName: string,
    slot: Date,
    status: ExecutionStatus,
    taskVersion: number,
    extra: { trigger?: ExecutionTrigger; attempt?: number } = {},
  ) {
    const id = randomUUID();
    await ctx.db.prisma.taskExecution.create({
      data: { id, taskId, taskName, scheduledFor: slot, fireAt: slot, status, taskVersion, ...extra },
    });
    return id;
  }

  const execution = (id: string) => ctx.db.prisma.taskExecution.findFirst({ where: { id } });
  const taskNamed = (name: string) => ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });

  it('a change to what runs keeps the planned slot: one run, under the new definition', async () => {
    const { task, slot, planned } = await plannedTask('edit-handler');
    const res = await ctx.api.call('PATCH', '/v1/tasks/edit-handler', { handler: 'log', payload: { v: 2 } });
    expect(res.status).toBe(200);
    const after = await taskNamed('edit-handler');
    expect(after.planVersion).toBe(task.planVersion + 1);
    expect(await execution(planned)).toMatchObject({
      status: 'queued',
      scheduledFor: slot,
      taskVersion: after.planVersion,
    });
    // The cursor stays past the planned slot: nothing is planned twice, nothing skipped.
    expect(after.nextRunAt!.getTime()).toBe(slot.getTime() + MINUTE);
  });

  it('a description, notification or label change re-plans nothing', async () => {
    const { task, planned } = await plannedTask('edit-description');
    await ctx.api.call('PATCH', '/v1/tasks/edit-description', {
      description: 'read by people',
      notify: { on: ['dead', 'succeeded'], url: 'https://example.com/n' },
    });
    const after = await taskNamed('edit-description');
    expect([after.version, after.planVersion]).toEqual([task.version + 1, task.planVersion]);
    expect(await execution(planned)).toMatchObject({ status: 'queued', taskVersion: task.planVersion });
  });

  it('a schedule change keeps a planned slot the new schedule also has, and withdraws one it does not', async () => {
    const { slot } = await plannedTask('edit-schedule');
    const minute = new Date(slot).getUTCMinutes();
    // Every two minutes, on the parity of the planned slot: the slot stays…
    const same = `${minute % 2}-59/2 * * * *`;
    expect((await ctx.api.call('PATCH', '/v1/tasks/edit-schedule', { schedule: { cron: same } })).status).toBe(200);
    const kept = await ctx.db.prisma.taskExecution.findMany({ where: { taskName: 'edit-schedule' } });
    expect(kept.map((e) => [e.status, e.scheduledFor.getTime()])).toEqual([['queued', slot.getTime()]]);
    // …on the other parity it is withdrawn (it never came), and the cursor is the new schedule's next slot.
    const other = `${(minute + 1) % 2}-59/2 * * * *`;
    const res = await ctx.api.call('PATCH', '/v1/tasks/edit-schedule', { schedule: { cron: other } });
    expect(await ctx.db.prisma.taskExecution.count({ where: { taskName: 'edit-schedule' } })).toBe(0);
    expect(Date.parse(res.body.nextRunAt)).toBe(slot.getTime() + MINUTE);
  });

  it('an edit undone keeps the slot: withdrawn, then planned again, never lost to the unique key', async () => {
    const { slot } = await plannedTask('edit-undo');
    const minute = new Date(slot).getUTCMinutes();
    await ctx.api.call('PATCH', '/v1/tasks/edit-undo', { schedule: { cron: `${(minute + 1) % 2}-59/2 * * * *` } });
    const back = await ctx.api.call('PATCH', '/v1/tasks/edit-undo', { schedule: { cron: '* * * * *' } });
    // The slot has no row and the cursor is on it: the planner records it again.
    expect(Date.parse(back.body.nextRunAt)).toBe(slot.getTime());
    expect(await ctx.db.prisma.taskExecution.count({ where: { taskName: 'edit-undo' } })).toBe(0);
  });

  it('an edit while the planner is behind plans the old definition up to the edit first (none left without a row)', async () => {
    const { task } = await plannedTask('edit-behind');
    const cursor = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 3 * MINUTE);
    await ctx.db.prisma.taskExecution.deleteMany({ where: { taskId: task.id } });
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: cursor } });
    await ctx.api.call('PATCH', '/v1/tasks/edit-behind', { schedule: { cron: '*/30 * * * *' } });
    const rows = await ctx.db.prisma.taskExecution.findMany({
      where: { taskId: task.id },
      orderBy: { scheduledFor: 'asc' },
    });
    // The three (or four, at a minute boundary) old slots up to the edit, due within maxDelay: they run.
    expect(rows.length).toBeGreaterThanOrEqual(3);
    expect(rows[0]!.scheduledFor.getTime()).toBe(cursor.getTime());
    expect(
      rows.every((r) => r.status === 'scheduled' && r.trigger === 'schedule' && r.taskVersion === task.planVersion + 1),
    ).toBe(true);
  });

  it('an execution in progress keeps the definition it started with; its retries finish the slot', async () => {
    const { task } = await plannedTask('edit-running', { handler: 'fail', payload: { succeedOnAttempt: 2 } });
    const running = await row(task.id, 'edit-running', new Date(Date.now() - MINUTE), 'running', task.planVersion, {
      attempt: 1,
    });
    const retrying = await row(
      task.id,
      'edit-running',
      new Date(Date.now() - 2 * MINUTE),
      'retrying',
      task.planVersion,
      { attempt: 1 },
    );
    await ctx.api.call('PATCH', '/v1/tasks/edit-running', { handler: 'noop', payload: {} });
    for (const id of [running, retrying]) {
      expect((await execution(id))!.pinnedDefinition).toMatchObject({
        handler: 'fail',
        payload: { succeedOnAttempt: 2 },
        maxAttempts: 3,
      });
    }
  });

  it('an edit to overlap: allow un-parks the slot waiting behind a run: no hand-over serves it any more, so it must not stay parked', async () => {
    const { task, planned } = await plannedTask('edit-unpark', { policy: { overlap: 'buffer_one' } });
    await row(task.id, 'edit-unpark', new Date(Date.now() - MINUTE), 'running', task.planVersion, { attempt: 1 });
    // The slot buffered behind the running one: parked, with its buffer mark.
    await ctx.db.prisma.taskExecution.updateMany({
      where: { id: planned },
      data: { parkedAt: new Date(), nextAttemptAt: new Date() },
    });
    const res = await ctx.api.call('PATCH', '/v1/tasks/edit-unpark', { policy: { overlap: 'allow' } });
    expect(res.status).toBe(200);
    expect(await execution(planned)).toMatchObject({
      status: 'queued',
      exclusive: false,
      parkedAt: null,
      nextAttemptAt: null,
    });
  });

  it('an edit between exclusive policies keeps the slot parked behind the run: its end hands it its turn', async () => {
    const { task, planned } = await plannedTask('edit-keep-park', { policy: { overlap: 'buffer_one' } });
    await row(task.id, 'edit-keep-park', new Date(Date.now() - MINUTE), 'running', task.planVersion, { attempt: 1 });
    const parkedAt = new Date();
    await ctx.db.prisma.taskExecution.updateMany({ where: { id: planned }, data: { parkedAt } });
    expect((await ctx.api.call('PATCH', '/v1/tasks/edit-keep-park', { policy: { overlap: 'skip' } })).status).toBe(200);
    expect(await execution(planned)).toMatchObject({ status: 'queued', exclusive: true, parkedAt });
  });

  it('pause then resume right before a slot: the slot is withdrawn, then planned again on resume', async () => {
    const { slot, planned } = await plannedTask('pause-resume-quick');
    const paused = await ctx.api.call('POST', '/v1/tasks/pause-resume-quick/pause');
    expect(paused.body.status).toBe('paused');
    expect(await execution(planned)).toBeNull();
    const resumed = await ctx.api.call('POST', '/v1/tasks/pause-resume-quick/resume', {});
    expect(resumed.body.status).toBe('active');
    // Nothing of the pause was due: no catch-up, no missed; the slot is the cursor again.
    expect(Date.parse(resumed.body.nextRunAt)).toBe(slot.getTime());
    expect(resumed.body.missedCount).toBe(0);
    expect(await ctx.db.prisma.taskExecution.count({ where: { taskName: 'pause-resume-quick' } })).toBe(0);
  });

  it('pause skips slots that are due and not started; executions in progress finish unless the pause cancels them', async () => {
    const { task } = await plannedTask('pause-due');
    const due = await row(task.id, 'pause-due', new Date(Date.now() - 1_000), 'queued', task.planVersion);
    const running = await row(task.id, 'pause-due', new Date(Date.now() - MINUTE), 'running', task.planVersion, {
      attempt: 1,
    });
    await ctx.api.call('POST', '/v1/tasks/pause-due/pause');
    expect(await execution(due)).toMatchObject({ status: 'skipped', skipReason: 'paused' });
    expect((await execution(running))!.status).toBe('running');
    await ctx.api.call('POST', '/v1/tasks/pause-due/resume', { catchUp: 'skip' });
    await ctx.api.call('POST', '/v1/tasks/pause-due/pause', { cancel: true });
    expect((await execution(running))!.status).toBe('cancelled');
  });

  it('PATCH paused: true pauses like the pause route does', async () => {
    const { planned } = await plannedTask('patch-paused');
    const res = await ctx.api.call('PATCH', '/v1/tasks/patch-paused', { paused: true });
    expect(res.body).toMatchObject({ status: 'paused', paused: true });
    expect(await execution(planned)).toBeNull();
    const back = await ctx.api.call('PATCH', '/v1/tasks/patch-paused', { paused: false });
    expect(back.body.status).toBe('active');
  });

  it('delete cancels every unfinished execution, running ones too, and withdraws the slots still to come', async () => {
    const { task, planned } = await plannedTask('delete-running');
    const running = await row(task.id, 'delete-running', new Date(Date.now() - MINUTE), 'running', task.planVersion, {
      attempt: 1,
    });
    const due = await row(task.id, 'delete-running', new Date(Date.now() - 2 * MINUTE), 'queued', task.planVersion);
    expect((await ctx.api.call('DELETE', '/v1/tasks/delete-running')).status).toBe(204);
    for (const id of [due, running]) expect((await execution(id))!.status).toBe('cancelled');
    expect(await execution(planned)).toBeNull();
  });

  it('a one-off moved to an instant already past is refused (422) and changes nothing; its own instant, once past, still allows other edits', async () => {
    const at = new Date(Date.now() + 60 * MINUTE).toISOString();
    expect(
      (await ctx.api.call('POST', '/v1/tasks', { name: 'one-off', handler: 'noop', schedule: { at } })).status,
    ).toBe(201);
    const before = await taskNamed('one-off');
    const past = new Date(Date.now() - MINUTE).toISOString();
    const res = await ctx.api.call('PATCH', '/v1/tasks/one-off', { schedule: { at: past } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      code: 'invalid_schedule',
      message: expect.stringContaining('schedule.at is in the past'),
    });
    expect(await taskNamed('one-off')).toMatchObject({
      status: 'active',
      runAt: before.runAt,
      version: before.version,
    });
    // The same through a replace and a batch.
    expect((await ctx.api.call('PUT', '/v1/tasks/one-off', { handler: 'noop', schedule: { at: past } })).status).toBe(
      422,
    );
    expect(
      (
        await ctx.api.call('POST', '/v1/tasks:batch', {
          tasks: [{ name: 'one-off', handler: 'noop', schedule: { at: past } }],
        })
      ).status,
    ).toBe(422);
    // Its own instant, once it has passed, is no reason to refuse an edit of something else.
    await ctx.db.prisma.task.update({
      where: { id: before.id },
      data: {
        runAt: new Date(past),
        status: 'completed',
        nextRunAt: null,
        createdAt: new Date(Date.now() - 120 * MINUTE),
      },
    });
    const described = await ctx.api.call('PATCH', '/v1/tasks/one-off', { description: 'ran already' });
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({ description: 'ran already', status: 'completed' });
  });
});
