import { randomUUID } from 'node:crypto';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { describe, expect, it } from 'vitest';
import { useRepositorySandbox } from '../support/api-sandbox.js';

/**
 * A run's job goes to the queue of its handler, and a worker takes jobs only from the queues of the
 * handlers it offers. The one way a worker meets a run it cannot run is a handler changed after the
 * job was pushed: the claim then moves the job to its handler's queue and leaves the row as it was.
 */
describe('a claim of a run whose handler this worker does not offer', () => {
  const ctx = useRepositorySandbox();
  const moved = async (handler: string) =>
    (await ctx.db.metrics.moved.get()).values.find((v) => v.labels.handler === handler)?.value ?? 0;
  /** The same count under the metric's former name, a deprecated alias for one release. */
  const sentBack = async (handler: string) =>
    (await ctx.db.metrics.registry.getSingleMetric('punctual_runs_sent_back_total')!.get()).values.find(
      (v) => v.labels.handler === handler,
    )?.value ?? 0;

  async function due(
    handler: string,
    row: { status?: 'scheduled' | 'retrying'; attempt?: number; pinnedHandler?: string } = {},
  ) {
    const task = await ctx.db.prisma.task.create({
      data: { name: `t-${randomUUID().slice(0, 8)}`, handler, scheduleKind: 'cron', cron: '* * * * * *', secret: 's' },
    });
    const fireAt = new Date(Date.now() - 500);
    const { status = 'scheduled', attempt = 0, pinnedHandler } = row;
    const execution = await ctx.db.prisma.taskExecution.create({
      data: {
        id: executionIdFor(fireAt),
        taskId: task.id,
        taskName: task.name,
        scheduledFor: fireAt,
        fireAt,
        taskVersion: 1,
        status,
        attempt,
        nextAttemptAt: status === 'retrying' ? fireAt : null,
        pinnedDefinition: pinnedHandler ? { handler: pinnedHandler } : undefined,
      },
    });
    return { task, execution };
  }

  it("moves the job to its handler's queue, the row untouched and no attempt spent; a worker offering it then runs it", async () => {
    const { execution } = await due('send-mail');
    const before = await moved('send-mail');
    const beforeAlias = await sentBack('send-mail');
    const request = { id: execution.id, attemptId: randomUUID(), workerId: 'builtin', releasedAt: Date.now() };
    expect(await ctx.db.claim(request, { offers: ['noop', 'http', 'log'] })).toEqual({
      kind: 'moved',
      handler: 'send-mail',
      attempt: 1,
    });
    expect(await ctx.db.prisma.taskExecution.findFirstOrThrow({ where: { id: execution.id } })).toMatchObject({
      status: 'scheduled',
      attempt: 0,
      attemptId: null,
      workerId: null,
    });
    expect(await moved('send-mail')).toBe(before + 1);
    expect(await sentBack('send-mail')).toBe(beforeAlias + 1);
    expect(
      await ctx.db.claim({ ...request, attemptId: randomUUID(), workerId: 'mail-app' }, { offers: ['send-mail'] }),
    ).toMatchObject({ kind: 'run' });
  });

  it("a retry pinned (by an edit) to another handler than its task's moves to the pinned handler's queue, for its next attempt", async () => {
    const { execution } = await due('noop', { status: 'retrying', attempt: 1, pinnedHandler: 'send-mail' });
    const request = { id: execution.id, attemptId: randomUUID(), workerId: 'builtin' };
    expect(await ctx.db.claim(request, { offers: ['noop'] })).toEqual({
      kind: 'moved',
      handler: 'send-mail',
      attempt: 2,
    });
    expect(await ctx.db.prisma.taskExecution.findFirstOrThrow({ where: { id: execution.id } })).toMatchObject({
      status: 'retrying',
      attempt: 1,
    });
    expect(await ctx.db.claim({ ...request, attemptId: randomUUID() }, { offers: ['send-mail'] })).toMatchObject({
      kind: 'run',
      execution: { attempt: 2 },
    });
  });
});
