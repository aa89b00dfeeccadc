import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

const MINUTE = 60_000;

interface FireTime {
  at: string;
  local: string;
}
interface Changes {
  fireTimes: { before: FireTime[]; after: FireTime[] };
  added: FireTime[];
  removed: FireTime[];
  moved: { from: FireTime; to: FireTime }[];
  pending: {
    kept: { executionId: string }[];
    withdrawn: { executionId: string; due: boolean }[];
    retimed: { executionId: string }[];
  };
  running: { executionId: string }[];
  warnings: string[];
}

describe('dry runs: ?dryRun=true previews a change, stores nothing, and says what the change then does', () => {
  const ctx = useApiSandbox();

  const create = async (body: Record<string, unknown>) => {
    const res = await ctx.api.call('POST', '/v1/tasks', { handler: 'noop', ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return ctx.db.prisma.task.findUniqueOrThrow({ where: { name: body.name as string } });
  };
  /** The task's next `n` slots planned ahead as the planner would leave them, the cursor after them. */
  const planAhead = async (name: string, slots: number[]) => {
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
    const ids: string[] = [];
    for (const at of slots) {
      const id = randomUUID();
      ids.push(id);
      await ctx.db.prisma.taskExecution.create({
        data: {
          id,
          taskId: task.id,
          taskName: name,
          scheduledFor: new Date(at),
          fireAt: new Date(at),
          taskVersion: task.planVersion,
          status: 'scheduled',
        },
      });
    }
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: new Date(slots.at(-1)! + MINUTE) } });
    return ids;
  };
  /** What the database holds of a task: its row and audit entries, as a dry run must leave them. */
  const stateOf = async (name: string) => ({
    task: await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } }),
    rows: await ctx.db.prisma.taskExecution.findMany({ where: { taskName: name }, orderBy: { scheduledFor: 'asc' } }),
    audit: await ctx.db.prisma.auditLog.count({ where: { target: name } }),
  });

  it('a PATCH dry run changes nothing and its preview is what the PATCH then does: the rows it withdraws, the fire times after', async () => {
    await create({ name: 'pv-minutes', schedule: { cron: '* * * * *' } });
    const first = Math.ceil((Date.now() + 2 * MINUTE) / MINUTE) * MINUTE;
    const ids = await planAhead('pv-minutes', [first, first + MINUTE, first + 2 * MINUTE, first + 3 * MINUTE]);
    const before = await stateOf('pv-minutes');

    const dry = await ctx.api.call('PATCH', '/v1/tasks/pv-minutes?dryRun=true&horizon=10', {
      schedule: { cron: '*/2 * * * *' },
    });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body.dryRun).toBe(true);
    expect(dry.body.schedule.cron).toBe('*/2 * * * *');
    expect(await stateOf('pv-minutes')).toEqual(before);
    const changes = dry.body.changes as Changes;
    expect(changes.fireTimes.before).toHaveLength(10);
    expect(changes.fireTimes.after).toHaveLength(10);
    expect(changes.fireTimes.after.every((f) => new Date(f.at).getUTCMinutes() % 2 === 0)).toBe(true);
    expect(changes.added).toEqual([]);
    expect(changes.removed.length).toBeGreaterThan(3);
    expect(changes.removed.every((f) => new Date(f.at).getUTCMinutes() % 2 === 1)).toBe(true);
    const odd = ids.filter((_, i) => new Date(first + i * MINUTE).getUTCMinutes() % 2 === 1);
    expect(changes.pending.withdrawn.map((p) => p.executionId).sort()).toEqual([...odd].sort());
    expect(changes.pending.kept.map((p) => p.executionId).sort()).toEqual(ids.filter((id) => !odd.includes(id)).sort());

    const real = await ctx.api.call('PATCH', '/v1/tasks/pv-minutes', { schedule: { cron: '*/2 * * * *' } });
    expect(real.status).toBe(200);
    expect(real.body.dryRun).toBeUndefined();
    const left = (await stateOf('pv-minutes')).rows.map((r) => r.id);
    expect(ids.filter((id) => !left.includes(id)).sort()).toEqual([...odd].sort());
    const upcoming = (await ctx.api.call('GET', '/v1/tasks/pv-minutes?upcoming=10')).body.upcoming as string[];
    expect(upcoming).toEqual(changes.fireTimes.after.map((f) => f.at));
  });

  it('a change of the DST policy in America/New_York names the slots it moves, and the edit then fires as previewed', async () => {
    await create({ name: 'pv-dst', schedule: { cron: '30 2 * * *', timezone: 'America/New_York' } });
    const dry = await ctx.api.call('PATCH', '/v1/tasks/pv-dst?dryRun=true&horizon=400', {
      schedule: { cron: '30 2 * * *', timezone: 'America/New_York', dst: { gap: 'skip' } },
    });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const changes = dry.body.changes as Changes;
    // Spring forward: 02:30 does not exist; shifted to 03:30 before, dropped after.
    expect(changes.removed).toHaveLength(1);
    expect(changes.removed[0]!.local).toMatch(/T03:30:00\.000-04:00$/);
    expect(changes.added).toEqual([]);
    expect(changes.warnings.join('\n')).toMatch(/DST policy change moves the slots .*T03:30:00\.000-04:00 → \(none\)/);
    expect(changes.fireTimes.after).toHaveLength(400);
    expect((await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'pv-dst' } })).dstGap).toBeNull();

    expect(
      (
        await ctx.api.call('PATCH', '/v1/tasks/pv-dst', {
          schedule: { cron: '30 2 * * *', timezone: 'America/New_York', dst: { gap: 'skip' } },
        })
      ).status,
    ).toBe(200);
    const upcoming = (await ctx.api.call('GET', '/v1/tasks/pv-dst?upcoming=100')).body.upcoming as string[];
    expect(upcoming).toEqual(changes.fireTimes.after.slice(0, 100).map((f) => f.at));
  });

  it('warns of a due slot withdrawn, of a schedule that never fires again, and of runs in progress; PUT, batch and a calendar preview too', async () => {
    const task = await create({ name: 'pv-warn', schedule: { cron: '* * * * *' } });
    const due = Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE;
    const [dueId] = await planAhead('pv-warn', [due]);
    await ctx.db.prisma.taskExecution.create({
      data: {
        id: executionIdFor(new Date(due - MINUTE)),
        taskId: task.id,
        taskName: 'pv-warn',
        scheduledFor: new Date(due - MINUTE),
        fireAt: new Date(due - MINUTE),
        taskVersion: 1,
        status: 'running',
        attempt: 1,
        startedAt: new Date(),
      },
    });
    const before = await stateOf('pv-warn');
    // An edit keeps a due slot (it runs under the new definition); a pause gives it up.
    const pause = await ctx.api.call('PUT', '/v1/tasks/pv-warn?dryRun=true', {
      handler: 'noop',
      schedule: { cron: '* * * * *' },
      paused: true,
    });
    expect(pause.status, JSON.stringify(pause.body)).toBe(200);
    expect((pause.body.changes as Changes).pending.withdrawn).toEqual([
      expect.objectContaining({ executionId: dueId, due: true }),
    ]);
    expect((pause.body.changes as Changes).warnings.join('\n')).toContain(
      'withdraws 1 slot(s) already due and not started',
    );
    const put = await ctx.api.call('PUT', '/v1/tasks/pv-warn?dryRun=true', {
      handler: 'noop',
      schedule: { cron: '0 0 1 1 *', endAt: new Date(Date.now() + 5 * MINUTE).toISOString() },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const changes = put.body.changes as Changes;
    expect(changes.fireTimes.after).toEqual([]);
    expect(changes.pending.kept).toEqual([expect.objectContaining({ executionId: dueId })]);
    expect(changes.running).toHaveLength(1);
    const warnings = changes.warnings.join('\n');
    expect(warnings).toContain('never fires again');
    expect(warnings).toContain('run(s) in progress finish their slot under the definition they started with');
    expect(await stateOf('pv-warn')).toEqual(before);

    // A PUT that would create the task: its fire times, nothing stored.
    const fresh = await ctx.api.call('PUT', '/v1/tasks/pv-fresh?dryRun=true', {
      handler: 'noop',
      schedule: { cron: '0 * * * *' },
    });
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ dryRun: true, name: 'pv-fresh' });
    expect(fresh.body.secret).toBeUndefined();
    expect(fresh.body.changes.fireTimes.after).toHaveLength(20);
    expect(await ctx.db.prisma.task.findUnique({ where: { name: 'pv-fresh' } })).toBeNull();

    const batch = await ctx.api.call('POST', '/v1/tasks:batch?dryRun=true&horizon=3', {
      tasks: [
        { name: 'pv-batch', handler: 'noop', schedule: { cron: '0 9 * * *' } },
        { name: 'pv-warn', handler: 'noop', schedule: { cron: '*/30 * * * *' } },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.dryRun).toBe(true);
    expect(
      batch.body.items.map((i: { name: string; created: boolean; changes: Changes }) => [
        i.name,
        i.created,
        i.changes.fireTimes.after.length,
      ]),
    ).toEqual([
      ['pv-batch', true, 3],
      ['pv-warn', false, 3],
    ]);
    expect(batch.body.items[0].secret).toBeUndefined();
    expect(await ctx.db.prisma.task.findUnique({ where: { name: 'pv-batch' } })).toBeNull();
    expect(await stateOf('pv-warn')).toEqual(before);

    // A calendar that would exclude every day of the next month: each task that excludes it says so.
    expect((await ctx.api.call('PUT', '/v1/calendars/pv-days', { dates: ['2020-01-01'] })).status).toBe(201);
    await create({ name: 'pv-daily', schedule: { cron: '0 12 * * *', exclude: ['pv-days'] } });
    const calendarBefore = await ctx.db.prisma.calendar.findUniqueOrThrow({ where: { name: 'pv-days' } });
    const dailyBefore = await stateOf('pv-daily');
    const cal = await ctx.api.call('PUT', '/v1/calendars/pv-days?dryRun=true', { dates: [], rrules: ['FREQ=DAILY'] });
    expect(cal.status, JSON.stringify(cal.body)).toBe(200);
    expect(cal.body).toMatchObject({ dryRun: true, rrules: ['FREQ=DAILY'], tasks: ['pv-daily'] });
    const daily = cal.body.changes['pv-daily'] as Changes;
    expect(daily.fireTimes.after).toEqual([]);
    expect(daily.removed).toHaveLength(20);
    expect(daily.warnings.join('\n')).toContain('pv-days exclude every slot of the next 31 days');
    expect(await ctx.db.prisma.calendar.findUniqueOrThrow({ where: { name: 'pv-days' } })).toEqual(calendarBefore);
    expect(await stateOf('pv-daily')).toEqual(dailyBefore);
  });

  it('a dry run counts nothing: no slot it would decide reaches punctual_slots_total (a pause, an apply that prunes)', async () => {
    const slotsTotal = async (outcome: string, reason: string) => {
      const text = (await ctx.api.call('GET', '/metrics')).body as string;
      const line = new RegExp(`^punctual_slots_total\\{outcome="${outcome}",reason="${reason}"\\} (\\d+)`, 'm').exec(
        text,
      );
      return Number(line?.[1] ?? 0);
    };
    const due = Math.floor(Date.now() / MINUTE) * MINUTE - 30_000;
    await create({ name: 'pv-counted', schedule: { cron: '* * * * *' }, managedBy: 'pv-repo' });
    await planAhead('pv-counted', [due]);
    const [paused, deleted] = [await slotsTotal('skipped', 'paused'), await slotsTotal('cancelled', 'deleted')];
    const dryPause = await ctx.api.call('PATCH', '/v1/tasks/pv-counted?dryRun=true', { paused: true });
    expect(dryPause.status, JSON.stringify(dryPause.body)).toBe(200);
    const dryPrune = await ctx.api.call('POST', '/v1/tasks:apply', {
      managedBy: 'pv-repo',
      tasks: [],
      prune: true,
      dryRun: true,
    });
    expect(dryPrune.status, JSON.stringify(dryPrune.body)).toBe(200);
    expect(dryPrune.body).toMatchObject({ dryRun: true, deleted: 1 });
    expect([await slotsTotal('skipped', 'paused'), await slotsTotal('cancelled', 'deleted')]).toEqual([
      paused,
      deleted,
    ]);
    // The same changes made count their slots: the counter is read right.
    expect((await ctx.api.call('PATCH', '/v1/tasks/pv-counted', { paused: true })).status).toBe(200);
    expect(await slotsTotal('skipped', 'paused')).toBeGreaterThan(paused);
  });

  /**
   * Whether a task's due run and its row can be locked (NOWAIT) well into a dry run that previews
   * many tasks, the first of them this one; fails the test if the dry run ended before the look.
   */
  const freeDuringDryRun = async (
    dryRun: () => Promise<{ status: number; body: any }>,
    task: { id: string },
    run: string,
  ) => {
    const probe = new pg.Client({ connectionString: ctx.sandbox.databaseUrl });
    await probe.connect();
    try {
      let ended = false;
      const dry = dryRun().finally(() => (ended = true));
      // Well into the dry run: its first task was previewed long since.
      await new Promise((r) => setTimeout(r, 400));
      const free = async (sql: string, id: string) => {
        await probe.query('BEGIN');
        try {
          await probe.query(sql, [id]);
          return true;
        } catch (error) {
          if ((error as { code?: string }).code === '55P03') return false;
          throw error;
        } finally {
          await probe.query('ROLLBACK');
        }
      };
      const runFree = await free('SELECT id FROM task_execution WHERE id = $1 FOR UPDATE NOWAIT', run);
      const taskFree = await free('SELECT id FROM task WHERE id = $1 FOR UPDATE NOWAIT', task.id);
      const stillRunning = !ended;
      const res = await dry;
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
      // The look came while the dry run still ran, or it says nothing.
      expect(stillRunning).toBe(true);
      return { free: { runFree, taskFree }, body: res.body };
    } finally {
      await probe.end();
    }
  };

  it("a batch's dry run holds no task's rows while it previews the others: a claim of its due run need not wait", async () => {
    const names = Array.from({ length: 300 }, (_, i) => `pv-lock-${String(i).padStart(3, '0')}`);
    const specs = (cron: string) => names.map((name) => ({ name, handler: 'noop', schedule: { cron } }));
    expect((await ctx.api.call('POST', '/v1/tasks:batch', { tasks: specs('0 9 * * *') })).status).toBe(200);
    const first = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: names[0]! } });
    const [run] = await planAhead(names[0]!, [Math.floor(Date.now() / MINUTE) * MINUTE - 30_000]);
    const { free, body } = await freeDuringDryRun(
      () => ctx.api.call('POST', '/v1/tasks:batch?dryRun=true', { tasks: specs('0 10 * * *') }),
      first,
      run!,
    );
    expect(free).toEqual({ runFree: true, taskFree: true });
    // Each preview is of its own task's edit still: 09:00 becomes 10:00.
    expect(body.items[0].changes.fireTimes.after[0].at).toMatch(/T10:00:00/);
    expect(body.items[299].changes.fireTimes.before[0].at).toMatch(/T09:00:00/);
  });

  it("a calendar's preview holds no task's rows while it previews the others that exclude it", async () => {
    const soon = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    expect((await ctx.api.call('PUT', '/v1/calendars/pv-lock-cal', { dates: [] })).status).toBe(201);
    const names = Array.from({ length: 300 }, (_, i) => `pv-cal-${String(i).padStart(3, '0')}`);
    const tasks = names.map((name) => ({
      name,
      handler: 'noop',
      schedule: { cron: '0 9 * * *', exclude: ['pv-lock-cal'] },
    }));
    expect((await ctx.api.call('POST', '/v1/tasks:batch', { tasks })).status).toBe(200);
    const first = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: names[0]! } });
    const [run] = await planAhead(names[0]!, [Math.floor(Date.now() / MINUTE) * MINUTE - 30_000]);
    const { free, body } = await freeDuringDryRun(
      () => ctx.api.call('PUT', '/v1/calendars/pv-lock-cal?dryRun=true', { dates: [soon] }),
      first,
      run!,
    );
    expect(free).toEqual({ runFree: true, taskFree: true });
    expect(Object.keys(body.changes)).toHaveLength(300);
    expect((await ctx.db.prisma.calendar.findUniqueOrThrow({ where: { name: 'pv-lock-cal' } })).dates).toEqual([]);
  });

  it("an apply's dry run holds no task's rows while it previews the others, and answers each one's effects", async () => {
    const names = Array.from({ length: 300 }, (_, i) => `pv-apply-${String(i).padStart(3, '0')}`);
    const file = (cron: string, dryRun = false) => ({
      managedBy: 'pv-apply',
      prune: true,
      dryRun,
      tasks: names.map((name) => ({ name, handler: 'noop', schedule: { cron }, managedBy: 'pv-apply' })),
    });
    expect((await ctx.api.call('POST', '/v1/tasks:apply', file('0 9 * * *'))).status).toBe(200);
    const first = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: names[0]! } });
    const [run] = await planAhead(names[0]!, [Math.floor(Date.now() / MINUTE) * MINUTE - 30_000]);
    // The file changes every task's hour, drops the last and declares a new one.
    const changed = file('0 10 * * *', true);
    changed.tasks = [...changed.tasks.slice(0, -1), { ...changed.tasks[0]!, name: 'pv-apply-new' }];
    const before = await stateOf(names[0]!);
    const { free, body } = await freeDuringDryRun(() => ctx.api.call('POST', '/v1/tasks:apply', changed), first, run!);
    expect(free).toEqual({ runFree: true, taskFree: true });
    expect(body).toMatchObject({ dryRun: true, created: 1, updated: 299, deleted: 1 });
    const item = (name: string) => body.items.find((i: { name: string }) => i.name === name);
    // (The first task's cursor was moved by planAhead: the second shows the schedules' hours.)
    expect(item(names[1]!).effects.fireTimes.before[0].at).toMatch(/T09:00:00/);
    expect(item(names[1]!).effects.fireTimes.after[0].at).toMatch(/T10:00:00/);
    expect(item('pv-apply-new').effects.fireTimes.after[0].at).toMatch(/T10:00:00/);
    expect(item(names[299]!)).toMatchObject({ action: 'delete' });
    expect(await stateOf(names[0]!)).toEqual(before);
    expect(await ctx.db.prisma.task.count({ where: { name: 'pv-apply-new' } })).toBe(0);
  });

  it('refuses a horizon out of bounds (422) and a dry run flag that is not a boolean (400)', async () => {
    await create({ name: 'pv-bad', schedule: { cron: '* * * * *' } });
    expect(
      (await ctx.api.call('PATCH', '/v1/tasks/pv-bad?dryRun=true&horizon=1001', { description: 'x' })).status,
    ).toBe(422);
    expect((await ctx.api.call('PATCH', '/v1/tasks/pv-bad?dryRun=true&horizon=0', { description: 'x' })).status).toBe(
      422,
    );
    expect((await ctx.api.call('PATCH', '/v1/tasks/pv-bad?dryRun=yes', { description: 'x' })).status).toBe(400);
    expect((await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'pv-bad' } })).description).toBeNull();
  });
});
