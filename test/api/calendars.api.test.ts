import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

/** Local date `days` after today in `zone`, as YYYY-MM-DD. */
function localDate(zone: string, days: number, from = Date.now()): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    new Date(from + days * 86_400_000),
  );
}

describe('calendars API', () => {
  const ctx = useApiSandbox();
  const daily = (name: string, exclude?: string[]) => ({
    name,
    handler: 'noop',
    schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin', ...(exclude && { exclude }) },
  });

  it('creates, lists, replaces (a new version) and deletes a calendar; the audit log has each change', async () => {
    const created = await ctx.api.call('PUT', '/v1/calendars/crud', {
      description: 'holidays',
      timezone: 'Europe/Berlin',
      dates: ['2026-12-26', '2026-12-25', '2026-12-25'],
      rrules: ['FREQ=YEARLY;BYMONTH=1;BYMONTHDAY=1'],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'crud',
      description: 'holidays',
      timezone: 'Europe/Berlin',
      dates: ['2026-12-25', '2026-12-26'],
      rrules: ['FREQ=YEARLY;BYMONTH=1;BYMONTHDAY=1'],
      version: 1,
      managedBy: null,
      tasks: [],
    });
    expect((await ctx.api.call('GET', '/v1/calendars')).body.items.map((c: { name: string }) => c.name)).toContain(
      'crud',
    );
    const replaced = await ctx.api.call('PUT', '/v1/calendars/crud', { dates: ['2027-01-01'] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      description: null,
      timezone: null,
      dates: ['2027-01-01'],
      rrules: [],
      version: 2,
    });
    expect((await ctx.api.call('GET', '/v1/calendars/crud')).body.version).toBe(2);
    expect((await ctx.api.call('DELETE', '/v1/calendars/crud')).status).toBe(204);
    expect((await ctx.api.call('GET', '/v1/calendars/crud')).status).toBe(404);
    expect((await ctx.api.call('DELETE', '/v1/calendars/crud')).status).toBe(404);
    const audit = await ctx.api.call('GET', '/v1/audit?target=crud');
    expect(audit.body.items.map((a: { action: string }) => a.action)).toEqual([
      'calendar.delete',
      'calendar.put',
      'calendar.put',
    ]);
  });

  it.each([
    [{ dates: ['2026-02-30'] }, 'dates[0]', 'invalid_calendar', 422],
    [{ dates: ['2026-12-25', '25/12/2026'] }, 'dates[1]', 'validation_failed', 422],
    [{ dates: [], timezone: 'Mars/Olympus' }, 'timezone', 'invalid_calendar', 422],
    [{ dates: [], rrules: ['FREQ=HOURLY'] }, 'rrules[0]', 'invalid_calendar', 422],
    [{ dates: [], rrules: ['FREQ=DAILY;BYHOUR=9'] }, 'rrules[0]', 'invalid_calendar', 422],
    [{ dates: [], rrules: ['FREQ=YEARLY;COUNT=2'] }, 'rrules[0]', 'invalid_calendar', 422],
  ])('refuses %o naming %s, and stores nothing', async (body, field, code, status) => {
    const res = await ctx.api.call('PUT', '/v1/calendars/bad', body);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect((await ctx.api.call('GET', '/v1/calendars/bad')).status).toBe(404);
  });

  it('refuses a PUT over a calendar or task a manager owns unless it names that manager (409 not_managed), and changes nothing', async () => {
    expect(
      (await ctx.api.call('PUT', '/v1/calendars/owned', { dates: ['2027-07-04'], managedBy: 'example-repo' })).status,
    ).toBe(201);
    const taken = await ctx.api.call('PUT', '/v1/calendars/owned', { dates: ['2027-12-25'] });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toMatchObject({
      code: 'not_managed',
      details: [
        { field: 'managedBy', message: expect.stringContaining('calendar "owned" is managed by "example-repo"') },
      ],
    });
    expect((await ctx.api.call('GET', '/v1/calendars/owned')).body).toMatchObject({
      dates: ['2027-07-04'],
      version: 1,
      managedBy: 'example-repo',
    });
    // Named, the manager's own write goes through.
    expect(
      (await ctx.api.call('PUT', '/v1/calendars/owned', { dates: ['2027-12-25'], managedBy: 'example-repo' })).body,
    ).toMatchObject({ dates: ['2027-12-25'], version: 2 });

    expect(
      (await ctx.api.call('POST', '/v1/tasks', { ...daily('owned-task'), managedBy: 'example-repo' })).status,
    ).toBe(201);
    const replaced = await ctx.api.call('PUT', '/v1/tasks/owned-task', { ...daily('owned-task'), handler: 'log' });
    expect([replaced.status, replaced.body.error?.code]).toEqual([409, 'not_managed']);
    expect((await ctx.api.call('GET', '/v1/tasks/owned-task')).body).toMatchObject({
      handler: 'noop',
      managedBy: 'example-repo',
      version: 1,
    });
  });

  it("lists a year's excluded days (its dates and its rules' days), refuses a bad year, and 404s an unknown calendar", async () => {
    await ctx.api.call('PUT', '/v1/calendars/days-of', {
      timezone: 'America/New_York',
      dates: ['2027-01-01', '2026-12-25'],
      rrules: ['FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4', 'FREQ=YEARLY;BYMONTH=11;BYDAY=4TH'],
    });
    const days = await ctx.api.call('GET', '/v1/calendars/days-of/days?year=2027');
    expect(days.status).toBe(200);
    expect(days.body).toEqual({
      name: 'days-of',
      year: 2027,
      timezone: 'America/New_York',
      days: ['2027-01-01', '2027-07-04', '2027-11-25'],
    });
    // Without a year, this one (UTC).
    expect((await ctx.api.call('GET', '/v1/calendars/days-of/days')).body.year).toBe(new Date().getUTCFullYear());
    for (const year of ['', 'soon', '1969', '2027.5']) {
      const refused = await ctx.api.call('GET', `/v1/calendars/days-of/days?year=${year}`);
      // Not a number: 400 (a wrong type); a number out of range or not whole: 422. Either names the field.
      expect([[400, 422].includes(refused.status), refused.body.error.details?.[0]?.field], year).toEqual([
        true,
        'year',
      ]);
    }
    expect((await ctx.api.call('GET', '/v1/calendars/nowhere/days?year=2027')).status).toBe(404);
  });

  it('answers 400 to a wrong type or an unknown field, and a bad name with 422', async () => {
    expect((await ctx.api.call('PUT', '/v1/calendars/bad', { dates: '2026-12-25' })).status).toBe(400);
    expect((await ctx.api.call('PUT', '/v1/calendars/bad', { dates: [], holidays: true })).status).toBe(400);
    const badName = await ctx.api.call('PUT', '/v1/calendars/Bad%20Name', { dates: [] });
    expect(badName.status).toBe(422);
    expect(badName.body.error).toMatchObject({ code: 'invalid_name', details: [{ field: 'name' }] });
  });

  it('refuses a task that excludes an unknown calendar with 422 naming the path, and creates nothing', async () => {
    const res = await ctx.api.call('POST', '/v1/tasks', daily('unknown-calendar', ['no-such-calendar']));
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'unknown_calendar', details: [{ field: 'schedule.exclude[0]' }] });
    expect((await ctx.api.call('GET', '/v1/tasks/unknown-calendar')).status).toBe(404);
    const batch = await ctx.api.call('POST', '/v1/tasks:batch', {
      tasks: [daily('batch-ok'), daily('batch-bad', ['nope'])],
    });
    expect(batch.status).toBe(422);
    expect(batch.body.error.details.map((d: { field: string }) => d.field)).toEqual(['tasks[1].schedule.exclude[0]']);
  });

  it("leaves a task's excluded days out of upcoming and previews; an edit of the calendar re-plans it", async () => {
    const [d1, d2] = [localDate('Europe/Berlin', 1), localDate('Europe/Berlin', 2)];
    expect((await ctx.api.call('PUT', '/v1/calendars/soon', { dates: [d1, d2] })).status).toBe(201);
    const created = await ctx.api.call('POST', '/v1/tasks', daily('with-holidays', ['soon']));
    expect(created.status).toBe(201);
    expect(created.body.schedule.exclude).toEqual(['soon']);
    const upcomingDays = async () =>
      ((await ctx.api.call('GET', '/v1/tasks/with-holidays?upcoming=6')).body.upcoming as string[]).map((at) =>
        localDate('Europe/Berlin', 0, Date.parse(at)),
      );
    let days = await upcomingDays();
    expect(days).not.toContain(d1);
    expect(days).not.toContain(d2);
    expect(days).toContain(localDate('Europe/Berlin', 3));
    const preview = await ctx.api.call('POST', '/v1/schedules/preview', {
      schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin', exclude: ['soon'] },
      count: 6,
    });
    expect(preview.body.fireTimes.map((f: { local: string }) => f.local.slice(0, 10))).toEqual(days);
    expect(
      (await ctx.api.call('POST', '/v1/schedules/preview', { schedule: { cron: '0 9 * * *', exclude: ['nope'] } }))
        .status,
    ).toBe(422);

    const version = created.body.version;
    expect((await ctx.api.call('PUT', '/v1/calendars/soon', { dates: [d2] })).status).toBe(200);
    days = await upcomingDays();
    expect(days).toContain(d1);
    expect(days).not.toContain(d2);
    const task = (await ctx.api.call('GET', '/v1/tasks/with-holidays')).body;
    expect(task.version).toBeGreaterThan(version);
    expect((await ctx.api.call('GET', '/v1/calendars/soon')).body.tasks).toEqual(['with-holidays']);
  });

  it('refuses to delete a calendar a task excludes (409, naming it) until the task no longer does', async () => {
    expect((await ctx.api.call('PUT', '/v1/calendars/in-use', { dates: ['2030-01-01'] })).status).toBe(201);
    expect((await ctx.api.call('POST', '/v1/tasks', daily('uses-it', ['in-use']))).status).toBe(201);
    const refused = await ctx.api.call('DELETE', '/v1/calendars/in-use');
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('calendar_in_use');
    expect(refused.body.error.message).toContain('"uses-it"');
    expect((await ctx.api.call('GET', '/v1/calendars/in-use')).status).toBe(200);
    expect((await ctx.api.call('PATCH', '/v1/tasks/uses-it', { schedule: { exclude: [] } })).status).toBe(200);
    expect((await ctx.api.call('GET', '/v1/tasks/uses-it')).body.schedule.exclude).toBeUndefined();
    expect((await ctx.api.call('DELETE', '/v1/calendars/in-use')).status).toBe(204);
  });

  it("judges a date in the calendar's zone: a Tokyo holiday drops the Los Angeles evening before", async () => {
    // 2030-12-25 in Tokyo is 2030-12-24T15:00Z–2030-12-25T15:00Z: 09:00 on the 24th in Los Angeles
    // (17:00Z) falls in it; 09:00 on the 25th (2030-12-25T17:00Z) does not.
    expect(
      (await ctx.api.call('PUT', '/v1/calendars/tokyo', { timezone: 'Asia/Tokyo', dates: ['2030-12-25'] })).status,
    ).toBe(201);
    const preview = await ctx.api.call('POST', '/v1/schedules/preview', {
      schedule: { cron: '0 9 * * *', timezone: 'America/Los_Angeles', exclude: ['tokyo'] },
      from: '2030-12-23T00:00:00Z',
      count: 3,
    });
    expect(preview.body.fireTimes.map((f: { local: string }) => f.local)).toEqual([
      '2030-12-23T09:00:00.000-08:00',
      '2030-12-25T09:00:00.000-08:00',
      '2030-12-26T09:00:00.000-08:00',
    ]);
  });

  it('applies calendars before the tasks that exclude them; a dry run changes nothing and answers the versions as they are', async () => {
    const body = (dates: string[], dryRun: boolean) => ({
      managedBy: 'cal-apply',
      dryRun,
      calendars: [{ name: 'applied-holidays', dates }],
      tasks: [daily('applied-task', ['applied-holidays'])],
    });
    const dry = await ctx.api.call('POST', '/v1/tasks:apply', body(['2031-01-01'], true));
    expect(dry.status).toBe(200);
    expect(dry.body.calendars).toEqual([{ name: 'applied-holidays', action: 'create', changes: [], version: null }]);
    expect((await ctx.api.call('GET', '/v1/calendars/applied-holidays')).status).toBe(404);
    expect((await ctx.api.call('GET', '/v1/tasks/applied-task')).status).toBe(404);
    expect((await ctx.api.call('POST', '/v1/tasks:apply', body(['2031-01-01'], false))).body.calendars).toMatchObject([
      { action: 'create', version: 1 },
    ]);
    const dryUpdate = await ctx.api.call('POST', '/v1/tasks:apply', body(['2031-01-02'], true));
    expect(dryUpdate.body.calendars).toMatchObject([
      { action: 'update', version: 1, changes: [{ field: 'dates', before: ['2031-01-01'], after: ['2031-01-02'] }] },
    ]);
    expect((await ctx.api.call('GET', '/v1/calendars/applied-holidays')).body).toMatchObject({
      version: 1,
      dates: ['2031-01-01'],
      managedBy: 'cal-apply',
      tasks: ['applied-task'],
    });
    const twice = await ctx.api.call('POST', '/v1/tasks:apply', {
      ...body([], false),
      calendars: [
        { name: 'x', dates: [] },
        { name: 'x', dates: [] },
      ],
    });
    expect(twice.body.error.details.map((d: { field: string }) => d.field)).toEqual(['calendars[1].name']);
  });

  it('shows health and slo on every task and filters by health', async () => {
    const created = await ctx.api.call('POST', '/v1/tasks', { ...daily('healthy-slo'), slo: { startWithin: '1m' } });
    expect(created.body).toMatchObject({
      slo: { startWithin: '1m' },
      health: { state: 'never_ran', lastSuccessAt: null, lastSlotAt: null, consecutiveFailures: 0 },
    });
    expect((await ctx.api.call('POST', '/v1/tasks/healthy-slo/pause', {})).body.health.state).toBe('paused');
    const paused = await ctx.api.call('GET', '/v1/tasks?health=paused');
    expect(paused.body.items.map((t: { name: string }) => t.name)).toEqual(['healthy-slo']);
    expect(paused.body.items[0].health.state).toBe('paused');
    expect((await ctx.api.call('GET', '/v1/tasks?health=sideways')).status).toBe(422);
    expect((await ctx.api.call('PATCH', '/v1/tasks/healthy-slo', { slo: null })).body.slo).toBeNull();
    expect((await ctx.api.call('POST', '/v1/tasks', { ...daily('bad-slo'), slo: { startWithin: '0ms' } })).status).toBe(
      422,
    );
  });
});
