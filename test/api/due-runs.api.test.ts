import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

const MINUTE = 60_000;
/** The first slot planned ahead is at least this far off: no assertion races its fire time. */
const MARGIN_MS = 20_000;

type Status = 'scheduled' | 'queued' | 'running' | 'succeeded' | 'dead' | 'cancelled';

/**
 * A task that fires every minute can have its run of the last minutes recorded and its next two
 * slots planned ahead, as the scheduler leaves it (no scheduler runs here: the rows are written as
 * it would write them, and its cursor is put on the slot after the planned ones).
 */
describe('due runs and planned slots', () => {
  const ctx = useApiSandbox();
  const ids = (items: { id: string }[]) => items.map((e) => e.id);
  const iso = (ms: number) => new Date(ms).toISOString();

  /** Creates an every-minute task and works out its slots: past ones, `base` (due now) and two ahead. */
  async function everyMinute(name: string, jitter = '0s') {
    expect(
      (await ctx.api.call('POST', '/v1/tasks', { name, handler: 'noop', schedule: { cron: '* * * * *', jitter } }))
        .status,
    ).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name } });
    const now = Date.now();
    const base = Math.floor(now / MINUTE) * MINUTE;
    let ahead = base + MINUTE;
    if (ahead - now < MARGIN_MS) ahead += MINUTE;
    const planned = [ahead, ahead + MINUTE];
    const cursor = ahead + 2 * MINUTE;
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { nextRunAt: new Date(cursor) } });
    /** Writes an execution of the slot `scheduledFor`, firing at `fireAt` (the slot by default). */
    const record = async (
      scheduledFor: number,
      status: Status,
      fireAt = scheduledFor,
      trigger: 'schedule' | 'manual' = 'schedule',
    ) => {
      const id = randomUUID();
      const started = status !== 'scheduled' && status !== 'queued' && status !== 'cancelled';
      await ctx.db.prisma.taskExecution.create({
        data: {
          id,
          taskId: task.id,
          taskName: name,
          scheduledFor: new Date(scheduledFor),
          fireAt: new Date(fireAt),
          trigger,
          status,
          taskVersion: task.planVersion,
          attempt: started ? 1 : 0,
          startedAt: started ? new Date(fireAt + 5) : null,
          finishedAt: started && status !== 'running' ? new Date(fireAt + 50) : null,
        },
      });
      return id;
    };
    return { task, base, planned, cursor, record };
  }

  it('lastExecution is the latest due run, never a slot planned ahead; upcoming starts after now with the planned slots', async () => {
    const { base, planned, cursor, record } = await everyMinute('hello');
    const older = await record(base - MINUTE, 'succeeded');
    await record(planned[0]!, 'scheduled');
    await record(planned[1]!, 'scheduled');
    const before = Date.now();
    let detail = (await ctx.api.call('GET', '/v1/tasks/hello')).body;
    expect(detail.lastExecution).toMatchObject({ id: older, status: 'succeeded' });
    // The planned slots come first: the cursor (the next slot not yet planned) is third.
    expect(detail.upcoming).toEqual([planned[0], planned[1], cursor, cursor + MINUTE, cursor + 2 * MINUTE].map(iso));
    expect(detail.upcoming.every((at: string) => Date.parse(at) > before)).toBe(true);
    // The next run is the first of them — in the detail, in the list and in a batch's answer — and
    // the planner's cursor, shown apart, is the first slot not planned yet.
    expect([detail.nextRunAt, detail.planCursor]).toEqual([iso(planned[0]!), iso(cursor)]);
    const listed = (await ctx.api.call('GET', '/v1/tasks?q=hello')).body.items.find(
      (t: { name: string }) => t.name === 'hello',
    );
    expect([listed.nextRunAt, listed.planCursor]).toEqual([iso(planned[0]!), iso(cursor)]);

    // Due is by the fire time: this slot's has come, and no worker has taken it yet.
    const waiting = await record(base, 'scheduled');
    detail = (await ctx.api.call('GET', '/v1/tasks/hello?upcoming=2')).body;
    expect(detail.lastExecution).toMatchObject({ id: waiting, status: 'scheduled' });
    expect(detail.upcoming).toEqual(planned.map(iso));
  });

  it('a task whose runs all died shows its dead last run, and its planned slot as the next fire', async () => {
    const { base, planned, record } = await everyMinute('all-dead');
    await record(base - 2 * MINUTE, 'dead');
    const last = await record(base - MINUTE, 'dead');
    await record(planned[0]!, 'scheduled');
    const detail = (await ctx.api.call('GET', '/v1/tasks/all-dead')).body;
    expect(detail.lastExecution).toMatchObject({ id: last, status: 'dead' });
    expect(detail.upcoming[0]).toBe(iso(planned[0]!));
    expect(detail.nextRunAt).toBe(iso(planned[0]!));
    expect(detail.health.state).toBe('failing');
  });

  it('a slot its jitter holds back is planned, not due: in upcoming, not the last run, listed only when asked', async () => {
    const { base, cursor, record } = await everyMinute('jittery', '5m');
    // The jitter put this slot's fire time four minutes after it: the slot has passed, the fire time has not.
    const held = await record(base, 'scheduled', base + 4 * MINUTE);
    const detail = (await ctx.api.call('GET', '/v1/tasks/jittery?upcoming=3')).body;
    expect(detail.lastExecution).toBeNull();
    expect(detail.upcoming).toEqual([iso(base), iso(cursor), iso(cursor + MINUTE)]);
    expect(detail.nextRunAt).toBe(iso(base));
    expect((await ctx.api.call('GET', '/v1/tasks/jittery/executions')).body).toEqual({ items: [], nextCursor: null });
    const planned = (await ctx.api.call('GET', '/v1/tasks/jittery/executions?planned=true')).body.items;
    expect(planned).toMatchObject([
      { id: held, status: 'scheduled', scheduledFor: iso(base), fireAt: iso(base + 4 * MINUTE), taskDeleted: false },
    ]);
  });

  it('the execution lists show due runs by default; planned=true adds the slots planned ahead; status=scheduled lists them unless planned=false', async () => {
    const { base, planned, record } = await everyMinute('lists');
    const done = await record(base - MINUTE, 'succeeded');
    const waiting = await record(base, 'scheduled');
    const [first, second] = [await record(planned[0]!, 'scheduled'), await record(planned[1]!, 'queued')];
    // A manual run is asked for now: due at once, whatever its fire time (a millisecond apart, for order).
    const manual = await record(base + 1, 'scheduled', Date.now() + 1000, 'manual');
    const list = async (path: string) => ids((await ctx.api.call('GET', path)).body.items);

    expect(await list('/v1/tasks/lists/executions')).toEqual([manual, waiting, done]);
    expect(await list('/v1/tasks/lists/executions?planned=false')).toEqual([manual, waiting, done]);
    expect(await list('/v1/tasks/lists/executions?planned=true')).toEqual([second, first, manual, waiting, done]);
    expect(await list('/v1/tasks/lists/executions?status=scheduled')).toEqual([first, manual, waiting]);
    expect(await list('/v1/tasks/lists/executions?status=queued')).toEqual([second]);
    expect(await list('/v1/tasks/lists/executions?status=scheduled&planned=false')).toEqual([manual, waiting]);
    expect(await list('/v1/executions?task=lists')).toEqual([manual, waiting, done]);
    expect(await list('/v1/executions?task=lists&planned=true')).toEqual([second, first, manual, waiting, done]);
    const everywhere = await list('/v1/executions?limit=500');
    expect(everywhere).toEqual(expect.arrayContaining([manual, waiting, done]));
    expect(everywhere).not.toEqual(expect.arrayContaining([first]));
    expect(everywhere).not.toEqual(expect.arrayContaining([second]));
    expect(await list('/v1/executions?limit=500&planned=true')).toEqual(expect.arrayContaining([first, second]));

    const malformed = await ctx.api.call('GET', '/v1/tasks/lists/executions?planned=yes');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details[0].field).toBe('planned');
  });

  it('pages stay in order and disjoint, with or without the planned slots, and while a slot falls due between pages', async () => {
    const { base, planned, record } = await everyMinute('paged');
    const due: string[] = [];
    for (let i = 5; i >= 1; i -= 1) due.push(await record(base - i * MINUTE, 'succeeded'));
    due.reverse();
    const ahead = [await record(planned[1]!, 'scheduled'), await record(planned[0]!, 'scheduled')];
    const walk = async (path: string, limit: number) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: { items: { id: string }[]; nextCursor: string | null } = (
          await ctx.api.call(
            'GET',
            `${path}${path.includes('?') ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
          )
        ).body;
        seen.push(...ids(page.items));
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor && pages < 20);
      return seen;
    };
    expect(await walk('/v1/tasks/paged/executions', 2)).toEqual(due);
    expect(await walk('/v1/tasks/paged/executions?planned=true', 3)).toEqual([...ahead, ...due]);
    expect(await walk('/v1/executions?task=paged', 4)).toEqual(due);

    // The nearer planned slot falls due after the first page was read: it sorts above that page's
    // cursor, so the next page neither repeats a run nor takes it in; a new first page has it.
    const page1 = (await ctx.api.call('GET', '/v1/tasks/paged/executions?limit=2')).body;
    expect(ids(page1.items)).toEqual(due.slice(0, 2));
    await ctx.db.prisma.taskExecution.updateMany({
      where: { id: ahead[1]! },
      data: { fireAt: new Date(Date.now() - 1000) },
    });
    const page2 = (await ctx.api.call('GET', `/v1/tasks/paged/executions?limit=2&cursor=${page1.nextCursor}`)).body;
    expect(ids(page2.items)).toEqual(due.slice(2, 4));
    expect(ids((await ctx.api.call('GET', '/v1/tasks/paged/executions?limit=2')).body.items)).toEqual([
      ahead[1],
      due[0],
    ]);
  });

  it("keeps a deleted task's history under its name; a name nothing was recorded under is 404; a new task of the name lists both", async () => {
    const { base, planned, record } = await everyMinute('gone');
    const old = [await record(base - 2 * MINUTE, 'succeeded'), await record(base - MINUTE, 'dead')];
    await record(planned[0]!, 'scheduled');
    expect((await ctx.api.call('DELETE', '/v1/tasks/gone')).status).toBe(204);
    expect((await ctx.api.call('GET', '/v1/tasks/gone')).status).toBe(404);

    // The delete withdrew the slot planned ahead: it never came due, so it is no run of the history.
    const history = await ctx.api.call('GET', '/v1/tasks/gone/executions');
    expect(history.status).toBe(200);
    expect(
      history.body.items.map((e: { id: string; status: string; task: string; taskDeleted: boolean }) => [
        e.id,
        e.status,
        e.task,
        e.taskDeleted,
      ]),
    ).toEqual([
      [old[1], 'dead', 'gone', true],
      [old[0], 'succeeded', 'gone', true],
    ]);
    expect(ids((await ctx.api.call('GET', '/v1/executions?task=gone')).body.items)).toEqual([old[1], old[0]]);
    // History exists, none of it running: an empty page, not "no such task".
    expect((await ctx.api.call('GET', '/v1/tasks/gone/executions?status=running')).body).toEqual({
      items: [],
      nextCursor: null,
    });
    const never = await ctx.api.call('GET', '/v1/tasks/never-was/executions');
    expect(never.status).toBe(404);
    expect(never.body.error).toMatchObject({ code: 'not_found', message: 'no task named "never-was"' });

    // A new task takes the name: its executions and the deleted task's are listed together, told apart
    // by taskDeleted; its last run is only ever its own.
    const again = await everyMinute('gone');
    expect((await ctx.api.call('GET', '/v1/tasks/gone')).body.lastExecution).toBeNull();
    const own = await again.record(base, 'succeeded');
    expect((await ctx.api.call('GET', '/v1/tasks/gone')).body.lastExecution).toMatchObject({
      id: own,
      taskDeleted: false,
    });
    const both = (await ctx.api.call('GET', '/v1/tasks/gone/executions')).body.items as {
      id: string;
      taskDeleted: boolean;
    }[];
    expect(both.map((e) => [e.id, e.taskDeleted])).toEqual([
      [own, false],
      [old[1], true],
      [old[0], true],
    ]);
  });
});
