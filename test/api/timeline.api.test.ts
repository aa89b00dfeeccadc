import { executionIdFor } from '../../libs/contract/src/index.js';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { plannerOver } from '../support/repositories.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

interface Item {
  scheduledFor: string;
  local: string;
  outcome: string;
  reason: string | null;
  detail: string;
  executionId?: string;
  trigger: string | null;
}

describe('GET /v1/tasks/{name}/timeline: every slot with one outcome, a reason and what caused it', () => {
  const ctx = useApiSandbox();

  const create = async (body: Record<string, unknown>, key?: string) => {
    const res = await ctx.api.call('POST', '/v1/tasks', { handler: 'noop', ...body }, {}, key);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return ctx.db.prisma.task.findUniqueOrThrow({ where: { name: body.name as string } });
  };
  const timeline = async (name: string, query: Record<string, string | number>) => {
    const res = await ctx.api.call(
      'GET',
      `/v1/tasks/${name}/timeline?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { items: Item[]; nextCursor: string | null; timezone: string };
  };
  const iso = (ms: number) => new Date(ms).toISOString();
  /** Moves a task's creation (row and audit entry) back, as if it had been created `ms` ago. */
  const createdAgo = async (name: string, ms: number) => {
    const at = new Date(Date.now() - ms);
    await ctx.db.prisma.task.update({ where: { name }, data: { createdAt: at } });
    await ctx.db.prisma.$executeRaw`
      UPDATE audit_log SET at = ${at}, after = jsonb_set(after, '{createdAt}', to_jsonb(${at.toISOString()}::text)) WHERE target = ${name} AND action = 'task.create'`;
  };
  const row = (task: { id: string; name: string; version: number }, at: number, fields: Record<string, unknown>) =>
    ctx.db.prisma.taskExecution.create({
      data: {
        id: executionIdFor(new Date(at)),
        taskId: task.id,
        taskName: task.name,
        scheduledFor: new Date(at),
        fireAt: new Date(at),
        taskVersion: task.version,
        ...fields,
      },
    });

  it('names the calendar that excluded a day', async () => {
    const tomorrow = new Date(Date.now() + DAY).toISOString().slice(0, 10);
    expect((await ctx.api.call('PUT', '/v1/calendars/holidays', { dates: [tomorrow] })).status).toBe(201);
    await create({ name: 'tl-calendar', schedule: { cron: '0 9 * * *', exclude: ['holidays'] } });
    const { items } = await timeline('tl-calendar', { from: iso(Date.now()), to: iso(Date.now() + 3 * DAY) });
    const excluded = items.filter((i) => i.outcome === 'not_planned');
    expect(excluded).toHaveLength(1);
    expect(excluded[0]).toMatchObject({ scheduledFor: `${tomorrow}T09:00:00.000Z`, reason: 'calendar' });
    expect(excluded[0]!.detail).toContain('"holidays"');
    expect(excluded[0]!.detail).toContain(tomorrow);
    expect(items.filter((i) => i.outcome === 'upcoming')).toHaveLength(2);
  });

  it('judges the past with the calendar as it was: a day removed later, or the calendar deleted, stays excluded then', async () => {
    const day = (ago: number) => new Date(Date.now() - ago * DAY).toISOString().slice(0, 10);
    const [d1, d2] = [day(3), day(2)];
    expect((await ctx.api.call('PUT', '/v1/calendars/tl-hist', { dates: [d1, d2] })).status).toBe(201);
    await ctx.db.prisma.$executeRaw`UPDATE audit_log SET at = now() - interval '11 days' WHERE target = 'tl-hist'`;
    await create({ name: 'tl-hist-task', schedule: { cron: '0 9 * * *', exclude: ['tl-hist'] } });
    await createdAgo('tl-hist-task', 10 * DAY);
    const range = { from: `${d1}T00:00:00Z`, to: `${d2}T23:00:00Z` };
    const outcomes = async () =>
      (await timeline('tl-hist-task', range)).items.map(
        (i) => `${i.scheduledFor.slice(0, 10)} ${i.outcome}/${i.reason}`,
      );
    const excludedThen = [`${d1} not_planned/calendar`, `${d2} not_planned/calendar`];
    expect(await outcomes()).toEqual(excludedThen);
    // The first day taken out of the calendar today: it was excluded when it came.
    expect((await ctx.api.call('PUT', '/v1/calendars/tl-hist', { dates: [d2] })).status).toBe(200);
    expect(await outcomes()).toEqual(excludedThen);
    // The task stops excluding it and the calendar goes: its days were still excluded then.
    expect((await ctx.api.call('PATCH', '/v1/tasks/tl-hist-task', { schedule: { exclude: [] } })).status).toBe(200);
    expect((await ctx.api.call('DELETE', '/v1/calendars/tl-hist')).status).toBe(204);
    expect(await outcomes()).toEqual(excludedThen);
    const items = (await timeline('tl-hist-task', range)).items;
    expect(items[0]!.detail).toContain('"tl-hist"');
  });

  it('says what a DST gap and fold in Europe/Berlin did under each policy', async () => {
    const berlin = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
    await create({ name: 'tl-gap-skip', schedule: { ...berlin, dst: { gap: 'skip' } } });
    await create({ name: 'tl-gap-shift', schedule: berlin });
    // 2027-03-28: 02:00 → 03:00 in Berlin; 2027-10-31: 03:00 → 02:00.
    const spring = { from: '2027-03-27T00:00:00Z', to: '2027-03-29T23:59:59Z' };
    const skipped = (await timeline('tl-gap-skip', spring)).items;
    expect(skipped.map((i) => `${i.local.slice(0, 16)} ${i.outcome}/${i.reason}`)).toEqual([
      '2027-03-27T02:30 upcoming/null',
      '2027-03-28T03:30 not_planned/dst_gap',
      '2027-03-29T02:30 upcoming/null',
    ]);
    expect(skipped[1]!.detail).toContain('does not exist on 2027-03-28 in Europe/Berlin');
    expect(skipped[1]!.detail).toContain('dst.gap skip');
    const shifted = (await timeline('tl-gap-shift', spring)).items;
    expect(shifted.map((i) => `${i.local.slice(0, 16)} ${i.outcome}/${i.reason}`)).toEqual([
      '2027-03-27T02:30 upcoming/null',
      '2027-03-28T03:30 upcoming/dst_gap',
      '2027-03-29T02:30 upcoming/null',
    ]);
    const fold = (await timeline('tl-gap-shift', { from: '2027-10-31T00:00:00Z', to: '2027-10-31T03:00:00Z' })).items;
    expect(fold.map((i) => `${i.local.slice(0, 26)} ${i.outcome}/${i.reason}`)).toEqual([
      '2027-10-31T02:30:00.000+02 upcoming/null',
      '2027-10-31T02:30:00.000+01 not_planned/dst_fold',
    ]);
    expect(fold[1]!.detail).toContain('dst.overlap first');
  });

  it('lists the slots before the task was created and after its schedule ends, each saying so', async () => {
    const endAt = Math.floor((Date.now() + 2 * HOUR) / HOUR) * HOUR + 30 * MINUTE;
    await create({ name: 'tl-bounds', schedule: { cron: '0 * * * *', endAt: iso(endAt) } });
    const now = Date.now();
    const { items } = await timeline('tl-bounds', { from: iso(now - 3 * HOUR), to: iso(now + 5 * HOUR) });
    const reasons = items.map((i) => i.reason ?? i.outcome);
    expect(reasons.slice(0, 3)).toEqual(['before_created', 'before_created', 'before_created']);
    expect(items.filter((i) => i.outcome === 'upcoming').map((i) => i.scheduledFor)).toEqual([
      iso(endAt - 90 * MINUTE),
      iso(endAt - 30 * MINUTE),
    ]);
    expect(reasons.slice(-3)).toEqual(['after_end', 'after_end', 'after_end']);
    expect(items.at(-1)!.detail).toContain('schedule.endAt');
    expect(items[0]!.detail).toContain('created later');
  });

  it('names the key that paused a task and the one that deleted it, and reads a deleted task by its name', async () => {
    const key = await ctx.api.call('POST', '/v1/api-keys', { name: 'ops-ci', role: 'admin' });
    expect(key.status).toBe(201);
    await create({ name: 'tl-paused', schedule: { cron: '*/5 * * * *' } });
    const pause = await ctx.api.call(
      'POST',
      '/v1/tasks/tl-paused/pause',
      { note: 'vendor outage, see INC-42' },
      {},
      key.body.key,
    );
    expect(pause.status).toBe(200);
    expect(pause.body).toMatchObject({ status: 'paused', pauseNote: 'vendor outage, see INC-42' });
    const paused = await timeline('tl-paused', { from: iso(Date.now()), to: iso(Date.now() + HOUR) });
    expect(new Set(paused.items.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['not_planned/paused']));
    expect(paused.items[0]!.detail).toMatch(
      /paused at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d by key ops-ci: "vendor outage, see INC-42"/,
    );
    // A resume clears the note; a pause without one has none.
    expect((await ctx.api.call('POST', '/v1/tasks/tl-paused/resume', {})).body.pauseNote).toBeNull();
    expect((await ctx.api.call('POST', '/v1/tasks/tl-paused/pause', {}, {}, key.body.key)).body.pauseNote).toBeNull();

    expect((await ctx.api.call('DELETE', '/v1/tasks/tl-paused', undefined, {}, key.body.key)).status).toBe(204);
    const deleted = await timeline('tl-paused', { from: iso(Date.now()), to: iso(Date.now() + HOUR) });
    expect(new Set(deleted.items.map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['not_planned/deleted']));
    expect(deleted.items[0]!.detail).toContain('deleted at');
    expect(deleted.items[0]!.detail).toContain('by key ops-ci');
    expect((await ctx.api.call('GET', '/v1/tasks/never-was/timeline')).status).toBe(404);
  });

  it('explains each execution from its row: skips, misses, retries, failures, cancels, waits', async () => {
    const task = await create({
      name: 'tl-rows',
      schedule: { cron: '* * * * *' },
      policy: { concurrency: { key: 'reports', limit: 1 } },
    });
    await createdAgo('tl-rows', 2 * HOUR);
    const base = Math.floor(Date.now() / MINUTE) * MINUTE - 90 * MINUTE;
    const at = (n: number) => base + n * MINUTE;
    const ran = await row(task, at(0), {
      status: 'succeeded',
      attempt: 1,
      startedAt: new Date(at(0) + 30_000),
      finishedAt: new Date(at(0) + 200_000),
    });
    await row(task, at(1), { status: 'skipped', skipReason: 'overlap', finishedAt: new Date(at(1)) });
    await row(task, at(2), { status: 'skipped', skipReason: 'late', finishedAt: new Date(at(2) + HOUR) });
    const retried = await row(task, at(3), {
      status: 'succeeded',
      attempt: 3,
      startedAt: new Date(at(3)),
      finishedAt: new Date(at(3) + 5_000),
    });
    await ctx.db.prisma.executionEvent.createMany({
      data: [
        {
          executionId: retried.id,
          scheduledFor: retried.scheduledFor,
          fromStatus: 'running',
          toStatus: 'retrying',
          detail: { error: 'HTTP 503 from the webhook' },
        },
        {
          executionId: retried.id,
          scheduledFor: retried.scheduledFor,
          fromStatus: 'running',
          toStatus: 'retrying',
          detail: { error: 'connect ECONNREFUSED' },
        },
      ],
    });
    await row(task, at(4), {
      status: 'dead',
      attempt: 1,
      startedAt: new Date(at(4)),
      finishedAt: new Date(at(4) + 1_000),
      error: 'boom',
    });
    await row(task, at(5), {
      status: 'succeeded',
      attempt: 1,
      startedAt: new Date(at(5) + 42_000),
      finishedAt: new Date(at(5) + 43_000),
      concurrencyKey: 'reports',
      flowWaitedMs: 41_500,
    });
    const cancelled = await row(task, at(6), { status: 'queued', fireAt: new Date(Date.now() + HOUR) });
    expect((await ctx.api.call('POST', `/v1/executions/${cancelled.id}/cancel`)).status).toBe(200);
    await row(task, at(7), { status: 'queued', heldAt: new Date(Date.now() - 12_000), concurrencyKey: 'reports' });
    // at(8): nothing recorded it; at(9…): nothing recorded either, and no missed slot after them.

    const { items } = await timeline('tl-rows', { from: iso(at(0)), to: iso(at(9)) });
    const by = (n: number) => items.find((i) => i.scheduledFor === iso(at(n)))!;
    expect(items.map((i) => `${i.outcome}/${i.reason}`)).toEqual([
      'succeeded/null',
      'skipped/overlap',
      'skipped/late',
      'succeeded/retried',
      'failed/handler_error',
      'succeeded/flow_control',
      'cancelled/cancelled_by',
      'pending/flow_control',
      'missed/unrecorded',
      'missed/unrecorded',
    ]);
    expect(by(0).detail).toContain('(30 s after its fire time)');
    expect(by(1).detail).toContain(`execution ${ran.id}`);
    expect(by(2).detail).toContain('maxDelay 1h');
    expect(by(3).detail).toContain('HTTP 503 from the webhook');
    expect(by(3).detail).toContain('ECONNREFUSED');
    expect(by(4).detail).toContain('boom');
    expect(by(5).detail).toContain('waited 42 s for key "reports"');
    expect(by(6).detail).toContain('by key admin-api-key');
    expect(by(7).detail).toMatch(/waiting 1\d s so far for key "reports"/);
    expect(by(0).executionId).toBe(ran.id);
  });

  it('credits a catch-up with exactly the slots it stood in for: not an earlier outage, not a lost slot before it', async () => {
    const task = await create({ name: 'tl-covers', schedule: { cron: '*/10 * * * *' } });
    await createdAgo('tl-covers', 3 * HOUR);
    const base = Math.floor(Date.now() / (10 * MINUTE)) * 10 * MINUTE - 2 * HOUR;
    const at = (n: number) => base + n * 10 * MINUTE;
    // An earlier outage's slot, given up as missed; a run; a slot nothing recorded; then an outage
    // whose slots a catch-up stood in for (at(3) only counted, the catch-up at(4) itself).
    await row(task, at(0), { status: 'missed', finishedAt: new Date(at(0) + HOUR) });
    await row(task, at(1), {
      status: 'succeeded',
      attempt: 1,
      startedAt: new Date(at(1)),
      finishedAt: new Date(at(1) + 1_000),
    });
    const catchUp = await row(task, at(4), {
      status: 'succeeded',
      trigger: 'catchup',
      attempt: 1,
      coversFrom: new Date(at(3)),
      fireAt: new Date(at(5)),
      startedAt: new Date(at(5)),
      finishedAt: new Date(at(5) + 1_000),
    });
    const { items } = await timeline('tl-covers', { from: iso(at(0)), to: iso(at(4)) });
    expect(items.map((i) => `${i.outcome}/${i.reason}`)).toEqual([
      'missed/late',
      'succeeded/null',
      'missed/unrecorded',
      'missed/catch_up',
      'succeeded/catch_up',
    ]);
    expect(items[3]!.detail).toContain(`catch-up run ${catchUp.id}`);
  });

  it('says a slot given up while no scheduler led the shard was missed for that, and who was waiting for which worker', async () => {
    const task = await create({ name: 'tl-leader', schedule: { cron: '* * * * *' } });
    await createdAgo('tl-leader', 3 * HOUR);
    const base = Math.floor(Date.now() / MINUTE) * MINUTE - 2 * HOUR;
    // Led until base + 10 min, then nobody until base + 70 min, then led again.
    await ctx.db.prisma.$executeRaw`
      INSERT INTO shard_leadership (shard, epoch, leader_id, acquired_at, heartbeat_at) VALUES
        (0, 1, 'scheduler-a', ${new Date(base - HOUR)}, ${new Date(base + 10 * MINUTE)}),
        (0, 2, 'scheduler-b', ${new Date(base + 70 * MINUTE)}, now())`;
    await row(task, base + 30 * MINUTE, { status: 'missed', finishedAt: new Date(base + 70 * MINUTE) });
    const { items } = await timeline('tl-leader', { from: iso(base + 30 * MINUTE), to: iso(base + 31 * MINUTE) });
    expect(items.map((i) => `${i.outcome}/${i.reason}`)).toEqual(['missed/no_leader', 'missed/no_leader']);
    expect(items[0]!.detail).toMatch(/no scheduler led shard 0 from \S+ \S+ to \S+ \S+/);

    const orphan = await create({
      name: 'tl-no-worker',
      handler: 'nobody-offers-this',
      schedule: { cron: '0 0 1 1 *' },
    });
    const due = Date.now() - 5_000;
    await row(orphan, due, { status: 'queued', trigger: 'manual' });
    const waiting = await timeline('tl-no-worker', { from: iso(due - 1), to: iso(due + 1) });
    expect(waiting.items.map((i) => `${i.outcome}/${i.reason}`)).toEqual(['pending/no_worker']);
    expect(waiting.items[0]!.detail).toContain('"nobody-offers-this"');
  });

  it('pages a 31-day every-minute timeline (44,640 slots) by 1,000, each slot once, in order', async () => {
    await create({ name: 'tl-month', schedule: { cron: '* * * * *' } });
    const from = Math.ceil(Date.now() / MINUTE) * MINUTE + DAY;
    const to = from + 31 * DAY - MINUTE;
    let cursor: string | null = null;
    const seen: number[] = [];
    let pages = 0;
    do {
      const page: { items: Item[]; nextCursor: string | null } = await timeline('tl-month', {
        from: iso(from),
        to: iso(to),
        limit: 1000,
        ...(cursor ? { cursor } : {}),
      });
      pages += 1;
      seen.push(...page.items.map((i) => Date.parse(i.scheduledFor)));
      expect(page.items.length).toBeLessThanOrEqual(1000);
      cursor = page.nextCursor;
    } while (cursor && pages < 100);
    expect(seen.length).toBe(44_640);
    expect(pages).toBe(45);
    expect(seen.every((t, i) => t === from + i * MINUTE)).toBe(true);
  });

  it('refuses a bad range with a 422 naming the parameter, and changes nothing', async () => {
    await create({ name: 'tl-bad', schedule: { cron: '* * * * *' } });
    const bad = async (query: string, field: string, code: string) => {
      const res = await ctx.api.call('GET', `/v1/tasks/tl-bad/timeline?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.code).toBe(code);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
      expect(JSON.stringify(res.body)).not.toMatch(/at \w+ \(/);
    };
    await bad('from=2026-06-02T00:00:00Z&to=2026-06-01T00:00:00Z', 'to', 'invalid_range');
    await bad('from=2026-06-01T00:00:00Z&to=2026-07-03T00:00:00Z', 'to', 'invalid_range');
    await bad('from=yesterday', 'from', 'validation_failed');
    await bad('from=2026-06-01T00:00:00Z&to=2026-06-01T25:00:00Z', 'to', 'validation_failed');
    expect((await ctx.api.call('GET', '/v1/tasks/tl-bad/timeline?limit=1001')).status).toBe(422);
    expect((await ctx.api.call('GET', '/v1/tasks/tl-bad/timeline?cursor=abc')).status).toBe(400);
  });
});

describe('the timeline of a task completed by its run limit', () => {
  const ctx = useApiSandbox();
  const iso = (ms: number) => new Date(ms).toISOString();

  it('says a task completed by its run limit did not run after its last slot, and never that one was lost', async () => {
    const created = await ctx.api.call('POST', '/v1/tasks', {
      handler: 'noop',
      name: 'tl-limit',
      schedule: { cron: '* * * * * *', remainingRuns: 3 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'tl-limit' } });
    const planner = plannerOver(ctx.db, ctx.sandbox.config());
    const epoch = await ctx.db.state.bumpEpoch('tl-limit');
    const planned = await planner.planDueSlots(epoch, () => new Date());
    const ours = planned.filter((e) => e.taskId === task.id).map((e) => e.scheduledFor.getTime());
    expect(ours).toHaveLength(3);
    const after = await ctx.db.prisma.task.findUniqueOrThrow({ where: { id: task.id } });
    expect(after).toMatchObject({ status: 'completed', remainingRuns: 0 });
    expect(after.lastScheduledFor?.getTime()).toBe(ours[2]);
    // The runs happen; then ten seconds go by.
    for (const at of ours)
      await ctx.db.prisma.taskExecution.updateMany({
        where: { taskId: task.id, scheduledFor: new Date(at) },
        data: { status: 'succeeded', attempt: 1, startedAt: new Date(at), finishedAt: new Date(at + 10) },
      });
    await new Promise((r) => setTimeout(r, Math.max(0, ours[2]! + 4_000 - Date.now())));
    const res = await ctx.api.call(
      'GET',
      `/v1/tasks/tl-limit/timeline?from=${iso(ours[0]! - 1)}&to=${iso(ours[2]! + 10_000)}`,
    );
    expect(res.status).toBe(200);
    const items = (res.body as { items: { outcome: string; reason: string | null; detail: string }[] }).items;
    expect(items.slice(0, 3).map((i) => `${i.outcome}/${i.reason}`)).toEqual([
      'succeeded/null',
      'succeeded/null',
      'succeeded/null',
    ]);
    expect(items).toHaveLength(13);
    expect(new Set(items.slice(3).map((i) => `${i.outcome}/${i.reason}`))).toEqual(new Set(['not_planned/run_limit']));
    expect(items[3]!.detail).toContain('run limit (schedule.remainingRuns) was spent');
    const entries = await ctx.db.prisma.auditLog.findMany({ where: { target: after.name, action: 'task.complete' } });
    expect(entries.map((e) => [e.actor, (e.after as { status: string }).status])).toEqual([['scheduler', 'completed']]);
  });
});
