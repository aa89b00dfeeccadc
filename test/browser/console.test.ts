import { randomUUID } from 'node:crypto';
import { executionIdFor } from '../../libs/contract/src/index.js';
import { Redis } from 'ioredis';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import {
  BROWSER_ZONE,
  fitsViewport,
  insertRuns,
  nextClockChange,
  openWatched,
  requireBuiltConsole,
  SCREENSHOTS,
  signIn,
  type WatchedPage,
} from './console-support.js';

/**
 * The console in a real headless Chromium: every page, every button's effect read back through the
 * API, the roles, a 375 px screen. No page may log an error or ask another origin for anything.
 */
describe('the console', () => {
  const ctx = useApiSandbox();
  let admin: WatchedPage;
  const watched: WatchedPage[] = [];
  const keys = { viewer: '', operator: '' };
  const call = (method: string, path: string, body?: unknown) => ctx.api.call(method, path, body);
  const runsOf = async (task: string) =>
    (await call('GET', `/v1/tasks/${task}/executions?limit=500`)).body.items as {
      id: string;
      trigger: string;
      status: string;
    }[];
  const row = (page: Page, text: string) => page.locator('tbody tr').filter({ hasText: text });
  /** The local dates (in Berlin) the seeded calendar excludes: the day after tomorrow and the day after it, both after the first fire time of a daily task. */
  let excludedDates: string[] = [];
  /** flaky-export's next slot, planned ahead: at least ten minutes off, so it never falls due while this file runs. */
  let flakyPlanned = 0;

  beforeAll(async () => {
    requireBuiltConsole();
    for (const role of ['viewer', 'operator'] as const)
      keys[role] = (await call('POST', '/v1/api-keys', { name: `console-${role}`, role })).body.key;
    excludedDates = [2, 3].map((days) => addDays(localDate(new Date(), 'Europe/Berlin'), days));
    expect(
      (await call('PUT', '/v1/calendars/console-holidays', { description: 'Days off', dates: excludedDates })).status,
    ).toBe(201);
    const tasks = [
      {
        name: 'nightly-report',
        description: 'Sends the nightly report',
        handler: 'noop',
        schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
        labels: { team: 'billing' },
        policy: {
          concurrency: { key: 'billing-api', limit: 2 },
          rateLimit: { key: 'billing-api', limit: 30, per: '1m' },
        },
      },
      {
        name: 'dst-report',
        handler: 'noop',
        schedule: {
          cron: '30 2 * * *',
          timezone: 'Europe/Berlin',
          startAt: new Date(nextClockChange('Europe/Berlin').getTime() - 10 * 86_400_000).toISOString(),
        },
      },
      { name: 'paused-sync', handler: 'log', schedule: { every: '15m' }, paused: true, labels: { team: 'ops' } },
      { name: 'doomed-task', handler: 'noop', schedule: { cron: '0 0 1 1 *' } },
      { name: 'flaky-export', handler: 'noop', schedule: { cron: '0 * * * *' } },
      {
        name: 'holiday-report',
        handler: 'noop',
        schedule: { cron: '0 12 * * *', timezone: 'Europe/Berlin', exclude: ['console-holidays'] },
        slo: { startWithin: '5m' },
      },
      ...Array.from({ length: 24 }, (_, i) => ({
        name: `z-bulk-${String(i + 1).padStart(2, '0')}`,
        handler: 'noop',
        schedule: { cron: '0 3 * * *' },
        labels: { team: 'bulk' },
      })),
    ];
    expect((await call('POST', '/v1/tasks:batch', { tasks })).status).toBe(200);
    await insertRuns(ctx, 'nightly-report', [
      { minutesAgo: 23 * 60, status: 'succeeded', lagMs: 4, durationMs: 120 },
      { minutesAgo: 20 * 60, status: 'succeeded', lagMs: 9, durationMs: 340 },
      { minutesAgo: 16 * 60, status: 'skipped' },
      { minutesAgo: 12 * 60, status: 'dead', lagMs: 12, durationMs: 2_400 },
      { minutesAgo: 8 * 60, status: 'succeeded', lagMs: 3, durationMs: 150 },
      { minutesAgo: 4 * 60, status: 'succeeded', lagMs: 250, durationMs: 900 },
      { minutesAgo: 30, status: 'succeeded', lagMs: 6, durationMs: 210 },
    ]);
    await insertRuns(
      ctx,
      'flaky-export',
      [120, 90, 60].map((minutesAgo) => ({ minutesAgo, status: 'dead' as const, error: 'connection refused' })),
    );
    // As the scheduler leaves it: the next slot planned ahead, the cursor on the one after.
    const flaky = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'flaky-export' } });
    flakyPlanned = Math.ceil(Date.now() / 3_600_000) * 3_600_000;
    if (flakyPlanned - Date.now() < 600_000) flakyPlanned += 3_600_000;
    await ctx.db.historyAt(flakyPlanned);
    await ctx.db.prisma.taskExecution.create({
      data: {
        id: executionIdFor(new Date(flakyPlanned)),
        taskId: flaky.id,
        taskName: 'flaky-export',
        scheduledFor: new Date(flakyPlanned),
        fireAt: new Date(flakyPlanned),
        taskVersion: flaky.version,
        status: 'scheduled',
      },
    });
    await ctx.db.prisma.task.update({
      where: { id: flaky.id },
      data: { nextRunAt: new Date(flakyPlanned + 3_600_000) },
    });
    await ctx.db.prisma.schedulerState.update({
      where: { id: 1 },
      data: {
        epoch: 7n,
        leaderId: 'sched-1:42',
        acquiredAt: new Date(Date.now() - 3_600_000),
        heartbeatAt: new Date(),
      },
    });
    const redis = new Redis(ctx.sandbox.config().redisUrl);
    await redis.set(
      `${ctx.sandbox.redisPrefix}:workers:host-a:1`,
      JSON.stringify({ handlers: ['http', 'noop'], concurrency: 50, at: new Date().toISOString() }),
      'EX',
      600,
    );
    await redis.set(
      `${ctx.sandbox.redisPrefix}:clock:scheduler:sched-1:42`,
      JSON.stringify({ offsetMs: 1.5, measuredAt: new Date().toISOString() }),
    );
    redis.disconnect();
    admin = await openWatched(ctx.api.base);
    watched.push(admin);
  });
  afterEach(() => {
    for (const w of watched) expect(w.problems.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    await Promise.all(watched.map((w) => w.browser.close()));
  });

  it('sends / to the login form and back, and says when a key is wrong', async () => {
    const { page } = admin;
    await page.goto(`${ctx.api.base}/`);
    expect(page.url()).toBe(`${ctx.api.base}/admin/login?next=%2F`);
    await page.getByLabel('API key').fill('pk_nottherealkey_xxxxxxxxxxxxxxxxxxxxxx');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('That key is not valid.');
    // The 401 document is what a wrong key gets; the browser reports it, and only it.
    admin.problems.splice(0, admin.problems.length, ...admin.problems.filter((p) => !/status of 401/.test(p)));
    await page.screenshot({ path: `${SCREENSHOTS}/login.png` });
    await signIn(page, ctx.api.base, ctx.api.config.adminApiKey!);
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents()).toEqual([
      'Tasks',
      'Calendars',
      'Dead letters',
      'Cluster',
      'Bull Board',
      'API docs',
    ]);
  });

  it('lists tasks with their health first, schedule in words, next fire in both zones, last run and labels; filters, searches and pages', async () => {
    const { page } = admin;
    await page.goto(`${ctx.api.base}/`);
    const nightly = row(page, 'nightly-report');
    await expect.poll(() => nightly.textContent()).toContain('succeeded');
    expect(await page.locator('thead th').allTextContents()).toEqual([
      'Health',
      'Name',
      'Status',
      'Schedule',
      'Next fire',
      'Last run',
      'Labels',
    ]);
    // Health, in words, in the first cell; the last success and the failures since on hover.
    const health = (name: string) => row(page, name).locator('td').first().locator('.status');
    expect(await health('nightly-report').textContent()).toBe('ok');
    expect(await health('nightly-report').getAttribute('title')).toMatch(
      /^last success \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} GMT\+[12]; 0 consecutive failures$/,
    );
    expect(await health('flaky-export').textContent()).toBe('failing');
    expect(await health('flaky-export').getAttribute('title')).toBe('no success yet; 3 consecutive failures');
    expect(await health('paused-sync').textContent()).toBe('paused');
    expect(await health('doomed-task').textContent()).toBe('never ran');
    // Every run of flaky-export died and its next slot is planned: the last run is a dead one, never
    // the slot planned ahead, which is the next fire (not the cursor an hour after it).
    const flaky = row(page, 'flaky-export');
    await expect.poll(() => flaky.locator('td[data-label="Last run"] .status').textContent()).toBe('dead');
    expect(await flaky.locator('td[data-label="Next fire"]').textContent()).toContain(
      new Date(flakyPlanned).toISOString().slice(0, 19).replace('T', ' '),
    );
    const text = (await nightly.textContent())!;
    expect(text).toContain('At 09:00 (Europe/Berlin)');
    expect(text).toContain('team=billing');
    expect(text).toMatch(/\d{4}-\d{2}-\d{2} 09:00:00 GMT\+[12]/);
    expect(text).toMatch(/yours: \d{4}-\d{2}-\d{2} 0[2-4]:00:00 GMT-[45]/);
    // The countdown beside the next fire stays on one line.
    const countdown = nightly.locator('td[data-label="Next fire"] .nowrap').first();
    expect(await countdown.textContent()).toMatch(/ · in \d+/);
    const whiteSpace = (el: unknown) =>
      (globalThis as unknown as { getComputedStyle: (e: unknown) => { whiteSpace: string } }).getComputedStyle(el)
        .whiteSpace;
    expect(await countdown.evaluate(whiteSpace)).toBe('nowrap');
    expect(await row(page, 'paused-sync').textContent()).toContain('Every 15 minutes');
    await page.screenshot({ path: `${SCREENSHOTS}/tasks.png` });

    expect(await page.locator('tbody tr').count()).toBe(25);
    await page.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(5);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(25);

    const only = async () => page.locator('tbody tr a.task-link').allTextContents();
    const filter = async (fill: () => Promise<unknown>) => {
      await page.goto(`${ctx.api.base}/`);
      await page.locator('tbody tr').first().waitFor();
      await fill();
      await page.getByRole('button', { name: 'Filter' }).click();
    };
    await filter(() => page.getByLabel('Label', { exact: true }).fill('team=ops'));
    await expect.poll(only).toEqual(['paused-sync']);
    expect(page.url()).toContain('label=team%3Dops');
    await filter(() => page.getByLabel('Status', { exact: true }).selectOption('paused'));
    await expect.poll(only).toEqual(['paused-sync']);
    await filter(() => page.getByLabel('Health', { exact: true }).selectOption('paused'));
    await expect.poll(only).toEqual(['paused-sync']);
    expect(page.url()).toBe(`${ctx.api.base}/?health=paused`);
    await filter(() => page.getByLabel('Health', { exact: true }).selectOption('failing'));
    await expect.poll(only).toEqual(['flaky-export']);
    expect(await page.locator('tbody tr td:first-child').allTextContents()).toEqual(['failing']);
    // The filter is read back from the address: a reload keeps it, and the select shows it.
    await page.reload();
    await expect.poll(only).toEqual(['flaky-export']);
    expect(await page.getByLabel('Health', { exact: true }).inputValue()).toBe('failing');
    await filter(() => page.getByLabel('Handler', { exact: true }).fill('log'));
    await expect.poll(only).toEqual(['paused-sync']);
    // A malformed label is explained by the contract's rule, and nothing is asked of the API.
    await filter(() => page.getByLabel('Label', { exact: true }).fill('no-equals-sign'));
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('label: must be key=value, e.g. team=billing');
    expect(page.url()).toBe(`${ctx.api.base}/`);
    await filter(() => page.getByLabel('Search', { exact: true }).fill('nightly'));
    await expect.poll(only).toEqual(['nightly-report']);
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(25);

    await page.getByRole('link', { name: 'nightly-report', exact: true }).click();
    await page.waitForURL(`${ctx.api.base}/tasks/nightly-report`);
    await page.getByRole('heading', { name: 'nightly-report', level: 1 }).waitFor();
  });

  it('shows a task: definition, 20 fire times with the clock change marked, a 24 h chart and the history with events', async () => {
    const { page } = admin;
    await page.goto(`${ctx.api.base}/tasks/nightly-report`);
    await page.getByText('Sends the nightly report').waitFor();
    const fireTimes = page.getByRole('region', { name: 'Next 20 fire times' }).getByRole('listitem');
    await expect.poll(() => fireTimes.count()).toBe(20);
    expect(await fireTimes.first().textContent()).toMatch(/09:00:00 GMT\+[12]/);

    const chart = page.getByRole('region', { name: 'Last 24 hours' });
    await expect
      .poll(() => chart.textContent())
      .toContain('7 runs in the last 24 hours: 5 succeeded, 1 dead, 1 skipped.');
    await expect.poll(() => chart.locator('canvas').count()).toBe(2);
    expect(await chart.getByRole('list', { name: 'Colours' }).textContent()).toMatch(/succeeded.*dead.*skipped/);

    const history = page.getByRole('region', { name: 'Run history' });
    await expect.poll(() => history.locator('tbody tr').count()).toBe(7);
    expect(await history.textContent()).toContain('skipped (overlap)');
    const dead = history.locator('tbody tr').filter({ hasText: 'dead' });
    expect(await dead.textContent()).toContain('HTTP 500 from the endpoint');
    await dead.getByText('Events').click();
    await expect
      .poll(() => dead.locator('.event-list li').allTextContents())
      .toEqual([
        expect.stringMatching(/planned → scheduled/),
        expect.stringMatching(/scheduled → queued/),
        expect.stringMatching(/retrying → running on host-a:1/),
        expect.stringMatching(/running → dead on host-a:1.*HTTP 500/),
      ]);
    // The keys it shares with other tasks.
    expect(await page.locator('.definition').textContent()).toContain(
      'at most 2 at once under billing-api; at most 30 starts per 1m under billing-api',
    );
    await page.screenshot({ path: `${SCREENSHOTS}/task.png`, fullPage: true });

    // 02:30 in Berlin across its next clock change: the change is marked once, on the first fire time after it.
    await page.goto(`${ctx.api.base}/tasks/dst-report`);
    const marked = page.locator('.fire-times li.dst');
    await expect.poll(() => marked.count()).toBe(1);
    const mark = (await marked.textContent())!;
    expect(mark).toMatch(/DST: clocks go (forward|back) 1 h \(\+0[12]:00 → \+0[12]:00\)/);
    // Spring forward: 02:30 does not exist that night and runs at 03:30 (DESIGN §6).
    if (mark.includes('forward')) expect(mark).toContain('03:30:00');
  });

  it('draws a timeline strip of the day and the week, explains a slot on hover and on click, and answers "why?" beside a run that did not succeed', async () => {
    expect(
      (
        await call('POST', '/v1/tasks', {
          name: 'strip-report',
          handler: 'noop',
          schedule: { cron: '0 * * * *', timezone: 'Europe/Berlin' },
        })
      ).status,
    ).toBe(201);
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'strip-report' } });
    // Created three days ago (its task row and its audit entry), so the day's every hour is its own.
    const created = new Date(Date.now() - 3 * 86_400_000);
    await ctx.db.prisma.task.update({ where: { id: task.id }, data: { createdAt: created } });
    await ctx.db.prisma
      .$executeRaw`UPDATE audit_log SET at = ${created}, after = jsonb_set(after, '{createdAt}', to_jsonb(${created.toISOString()}::text)) WHERE target = 'strip-report'`;
    const hour = 3_600_000;
    const slot = (hoursAgo: number) => new Date(Math.floor(Date.now() / hour) * hour - hoursAgo * hour);
    const base = { taskId: task.id, taskName: 'strip-report', taskVersion: task.version };
    const deadId = randomUUID();
    await ctx.db.historyAt(slot(3), slot(1));
    await ctx.db.prisma.taskExecution.createMany({
      data: [
        {
          ...base,
          id: executionIdFor(slot(3)),
          scheduledFor: slot(3),
          fireAt: slot(3),
          status: 'succeeded',
          attempt: 1,
          startedAt: slot(3),
          finishedAt: new Date(slot(3).getTime() + 500),
        },
        {
          ...base,
          id: deadId,
          scheduledFor: slot(2),
          fireAt: slot(2),
          status: 'dead',
          attempt: 1,
          startedAt: slot(2),
          finishedAt: new Date(slot(2).getTime() + 500),
          error: 'export service said 503',
        },
        {
          ...base,
          id: executionIdFor(slot(1)),
          scheduledFor: slot(1),
          fireAt: slot(1),
          status: 'skipped',
          skipReason: 'overlap',
          finishedAt: slot(1),
        },
      ],
    });

    const { page } = admin;
    await page.goto(`${ctx.api.base}/tasks/strip-report`);
    const strip = page.getByRole('region', { name: 'Timeline' });
    const cells = strip.locator('.slot-cell');
    // The day: 24 hourly slots back and two ahead (the strip looks 2 h past now).
    await expect.poll(() => cells.count()).toBeGreaterThanOrEqual(25);
    const dead = strip.locator('.slot-cell.outcome-failed');
    await expect.poll(() => dead.count()).toBe(1);
    expect(await dead.getAttribute('title')).toMatch(
      /failed \(handler error\): the handler failed: export service said 503/,
    );
    expect(await strip.locator('.slot-cell.outcome-succeeded').count()).toBe(1);
    expect(await strip.locator('.slot-cell.outcome-skipped').count()).toBe(1);
    expect(await strip.locator('.slot-cell.outcome-upcoming').count()).toBeGreaterThanOrEqual(1);
    expect(await strip.textContent()).toMatch(/1 succeeded · 1 failed · 1 skipped/);
    await dead.click();
    const explained = strip.getByRole('region', { name: 'Slot explanation' });
    await expect.poll(() => explained.textContent()).toContain('the handler failed: export service said 503');
    expect(await explained.textContent()).toContain(`run ${deadId}`);
    await explained.getByText('Events').click();
    await expect.poll(() => explained.locator('.event-list li').count()).toBeGreaterThan(0);

    await strip.getByRole('button', { name: 'Week' }).click();
    await expect.poll(() => cells.count()).toBeGreaterThanOrEqual(7 * 24);
    // Before its creation three days ago, the week's slots say the task did not exist yet.
    expect(await strip.locator('.slot-cell.outcome-not_planned').first().getAttribute('title')).toContain(
      'before created',
    );

    const history = page.getByRole('region', { name: 'Run history' });
    const deadRow = history.locator('tbody tr').filter({ hasText: 'dead' });
    await deadRow.getByRole('button', { name: 'why?' }).click();
    await expect
      .poll(() => deadRow.getByRole('note').textContent())
      .toContain('failed (handler error): the handler failed: export service said 503');
    const skippedRow = history.locator('tbody tr').filter({ hasText: 'skipped' });
    await skippedRow.getByRole('button', { name: 'why?' }).click();
    await expect.poll(() => skippedRow.getByRole('note').textContent()).toContain('skipped (overlap)');
    expect(
      await history.locator('tbody tr').filter({ hasText: 'succeeded' }).getByRole('button', { name: 'why?' }).count(),
    ).toBe(0);
    await page.screenshot({ path: `${SCREENSHOTS}/timeline.png`, fullPage: true });
    // The dead letter pages below count the dead runs the file seeded: this one is not theirs.
    await ctx.db.prisma.task.delete({ where: { id: task.id } });
    await ctx.db.prisma.taskExecution.deleteMany({ where: { taskName: 'strip-report' } });
  });

  it("lists a task's versions with what each changed, and rolls back after showing what the rollback would do; shows a run limit, a breaker and a pause note", async () => {
    expect(
      (
        await call('POST', '/v1/tasks', {
          name: 'ver-report',
          handler: 'noop',
          schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
        })
      ).status,
    ).toBe(201);
    expect(
      (await call('PATCH', '/v1/tasks/ver-report?reason=afternoons%20now', { schedule: { cron: '0 15 * * *' } }))
        .status,
    ).toBe(200);
    const { page } = admin;
    await page.goto(`${ctx.api.base}/tasks/ver-report`);
    const versions = page.getByRole('region', { name: 'Versions' });
    const items = versions.locator('li.version');
    await expect.poll(() => items.count()).toBe(2);
    expect(await items.nth(0).textContent()).toMatch(
      /version 2 \(now\) · update · .* by admin-api-key — “afternoons now”/,
    );
    expect(await items.nth(0).textContent()).toContain('schedule.cron: "0 9 * * *" → "0 15 * * *"');
    expect(await items.nth(0).getByRole('button').count()).toBe(0);
    await versions.getByRole('button', { name: 'Roll back to version 1' }).click();
    const dialog = page.getByRole('dialog', { name: 'Roll back to version 1?' });
    await expect
      .poll(() => dialog.textContent())
      .toMatch(/\d+ fire time\(s\) move, e\.g\. \S+ 15:00:00\+0[12]:00 → \S+ 09:00:00\+0[12]:00/);
    expect((await call('GET', '/v1/tasks/ver-report')).body.schedule.cron).toBe('0 15 * * *');
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toContain('Rolled ver-report back to version 1: it is now version 3.');
    expect((await call('GET', '/v1/tasks/ver-report')).body.schedule.cron).toBe('0 9 * * *');
    await expect.poll(() => items.count()).toBe(3);
    expect(await items.nth(0).textContent()).toMatch(/version 3 \(now\) · rollback/);
    await page.screenshot({ path: `${SCREENSHOTS}/versions.png`, fullPage: true });
    expect((await call('DELETE', '/v1/tasks/ver-report')).status).toBe(204);

    // A run limit, a failure breaker and a pause with a note, as the definition shows them.
    expect(
      (
        await call('POST', '/v1/tasks', {
          name: 'lim-report',
          handler: 'noop',
          schedule: { cron: '0 9 * * *', remainingRuns: 7 },
          policy: { pauseAfter: { failures: 5, within: '1h' } },
        })
      ).status,
    ).toBe(201);
    expect(
      (await call('POST', '/v1/tasks/lim-report/pause', { note: 'vendor outage, see INC-42' })).body.health.pauseNote,
    ).toBe('vendor outage, see INC-42');
    await page.goto(`${ctx.api.base}/tasks/lim-report`);
    const definition = page.locator('.definition');
    await expect.poll(() => definition.textContent()).toContain('Paused: vendor outage, see INC-42');
    expect(await definition.textContent()).toContain('pauses the task after 5 failed slot(s) within 1h');
    expect(await definition.textContent()).toContain('7 runs left');
    expect((await call('DELETE', '/v1/tasks/lim-report')).status).toBe(204);
  });

  it('strikes through the fire times a calendar of excluded days leaves out, and shows health, SLO and the calendar in the definition', async () => {
    const { page } = admin;
    // What the API plans: 20 fire times, none on an excluded day.
    const upcoming = (await call('GET', '/v1/tasks/holiday-report?upcoming=20')).body.upcoming as string[];
    expect(upcoming).toHaveLength(20);
    expect(
      upcoming.map((at) => localDate(new Date(at), 'Europe/Berlin')).filter((day) => excludedDates.includes(day)),
    ).toEqual([]);

    await page.goto(`${ctx.api.base}/tasks/holiday-report`);
    const fireTimes = page.getByRole('region', { name: 'Next 20 fire times' });
    const struck = fireTimes.locator('del');
    await expect.poll(() => struck.count()).toBe(2);
    expect(await fireTimes.locator('li:not(.excluded)').count()).toBe(20);
    const struckTexts = await struck.allTextContents();
    excludedDates.forEach((day, i) => expect(struckTexts[i]).toContain(`${day} 12:00:00 GMT+`));
    const excludedItems = fireTimes.locator('li.excluded');
    expect(await excludedItems.allTextContents()).toEqual([
      expect.stringContaining('excluded (console-holidays)'),
      expect.stringContaining('excluded (console-holidays)'),
    ]);
    expect(await excludedItems.first().getAttribute('aria-label')).toBe(
      `${excludedDates[0]} 12:00:00 ${zoneAbbreviation(excludedDates[0]!)}: excluded by console-holidays, not run`,
    );
    // In time order among the real ones: the days of the list, one after another, the excluded two included.
    const days = (await fireTimes.getByRole('listitem').allTextContents()).map(
      (text) => /\d{4}-\d{2}-\d{2}/.exec(text)![0],
    );
    expect(days).toHaveLength(22);
    expect(days.slice(1).every((day, i) => day === addDays(days[i]!, 1))).toBe(true);
    expect(days.filter((day) => excludedDates.includes(day))).toEqual(excludedDates);

    const definition = (await page.locator('.definition').textContent())!;
    expect(definition).toMatch(/Health\s*never ran/);
    expect(definition).toContain('0 consecutive failures');
    expect(definition).toContain('starts within 5m of its fire time');
    expect(
      await page.getByRole('list', { name: 'Excluded calendars' }).getByRole('listitem').allTextContents(),
    ).toEqual(['console-holidays']);
    await page.screenshot({ path: `${SCREENSHOTS}/task-excluded-days.png`, fullPage: true });

    // The chip leads to the calendar: its year of excluded days, the two marked, and the task that uses it.
    await page
      .getByRole('list', { name: 'Excluded calendars' })
      .getByRole('link', { name: 'console-holidays' })
      .click();
    await page.waitForURL(/\/calendars\/console-holidays$/);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('console-holidays');
    const year = Number(excludedDates[0]!.slice(0, 4));
    if (year !== new Date().getUTCFullYear()) await page.getByRole('button', { name: 'Next year' }).click();
    const marked = page
      .getByRole('table', {
        name: /^(January|February|March|April|May|June|July|August|September|October|November|December) \d{4}$/,
      })
      .locator('td.excluded-day time');
    await expect
      .poll(async () =>
        (await marked.evaluateAll((cells) => cells.map((c) => c.getAttribute('datetime')))).filter((d) =>
          d!.startsWith(String(year)),
        ),
      )
      .toEqual(excludedDates.filter((d) => d.startsWith(String(year))));
    expect(await page.getByRole('list', { name: 'Tasks that exclude it' }).getByRole('link').allTextContents()).toEqual(
      ['holiday-report'],
    );
    await page.screenshot({ path: `${SCREENSHOTS}/calendar.png`, fullPage: true });
    // And the list of calendars names it, with what it holds and who uses it.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Calendars' }).click();
    const listed = row(page, 'console-holidays');
    await expect.poll(() => listed.locator('td[data-label="Days"]').textContent()).toBe('2 dates, 0 rules');
    expect(await listed.locator('td[data-label="Used by"]').textContent()).toBe('holiday-report');
  });

  it('shows a one-off at its wall time in its own zone, never the bare UTC instant, and one attempt in the singular', async () => {
    const { page } = admin;
    expect(
      (
        await call('POST', '/v1/tasks', {
          name: 'launch-once',
          handler: 'noop',
          schedule: { at: '2035-06-01T02:00:00Z', timezone: 'Europe/Berlin' },
          policy: { retry: { attempts: 1 } },
        })
      ).status,
    ).toBe(201);
    await page.goto(`${ctx.api.base}/tasks/launch-once`);
    const definition = page.locator('.definition');
    await expect.poll(() => definition.textContent()).toContain('1 attempt,');
    const text = (await definition.textContent())!;
    expect(text).toContain('Once, at 2035-06-01 04:00:00 GMT+2');
    expect(await definition.locator('code').first().textContent()).toBe('2035-06-01 04:00:00 GMT+2');
    expect(text).not.toContain('2035-06-01T02:00:00');
    expect(text).not.toContain('1 attempts');
    expect((await call('DELETE', '/v1/tasks/launch-once')).status).toBe(204);
  });

  it("pauses, resumes with the catch-up chosen, triggers, backfills and deletes, as the API then shows; a deleted task's page keeps its runs", async () => {
    const { page } = admin;
    expect(
      (await call('POST', '/v1/tasks', { name: 'button-task', handler: 'noop', schedule: { cron: '* * * * * *' } }))
        .status,
    ).toBe(201);
    await page.goto(`${ctx.api.base}/tasks/button-task`);
    const status = page.getByRole('status');
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await expect.poll(() => status.textContent()).toContain('Paused button-task');
    expect((await call('GET', '/v1/tasks/button-task')).body.status).toBe('paused');
    const pausedAt = Date.now();

    // An every-second task paused for two seconds has slots to catch up; "skip" records them missed.
    await expect.poll(() => Date.now(), { timeout: 5_000 }).toBeGreaterThan(pausedAt + 2_100);
    await page.getByLabel('Catch-up').selectOption('skip');
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(() => status.textContent()).toContain('Resumed button-task (skip the slots of the pause)');
    expect((await call('GET', '/v1/tasks/button-task')).body.status).toBe('active');
    const afterResume = await runsOf('button-task');
    expect(afterResume.filter((r) => r.status === 'missed').length).toBeGreaterThanOrEqual(2);
    expect(afterResume.filter((r) => r.trigger === 'catchup')).toEqual([]);

    await page.getByRole('button', { name: 'Trigger', exact: true }).click();
    await expect.poll(() => status.textContent()).toMatch(/Triggered button-task: run [0-9a-f-]{36} is planned now\./);
    const runId = /run ([0-9a-f-]{36})/.exec((await status.textContent())!)![1];
    expect((await runsOf('button-task')).filter((r) => r.trigger === 'manual').map((r) => r.id)).toEqual([runId]);

    await page.getByRole('button', { name: 'Backfill', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Backfill button-task' });
    const wall = (ms: number) => new Date(ms).toLocaleString('sv-SE', { timeZone: BROWSER_ZONE }).replace(' ', 'T');
    await dialog.getByLabel('From').fill(wall(Date.now() - 5 * 60_000));
    await dialog.getByLabel('To').fill(wall(Date.now() - 4 * 60_000));
    await dialog.getByLabel('At most this many runs').fill('5');
    await dialog.getByRole('button', { name: 'Backfill' }).click();
    await expect.poll(() => status.textContent()).toContain('Backfill of button-task: 5 runs planned.');
    expect((await runsOf('button-task')).filter((r) => r.trigger === 'backfill')).toHaveLength(5);

    await page.goto(`${ctx.api.base}/tasks/doomed-task`);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete doomed-task?' });
    await confirm.getByRole('button', { name: 'Keep the task' }).click();
    expect((await call('GET', '/v1/tasks/doomed-task')).status).toBe(200);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${ctx.api.base}/`);
    expect((await call('GET', '/v1/tasks/doomed-task')).status).toBe(404);

    // A deleted task's page still lists its runs, read by its name.
    const before = (await runsOf('button-task')).map((r) => r.id);
    expect((await call('DELETE', '/v1/tasks/button-task')).status).toBe(204);
    await page.goto(`${ctx.api.base}/tasks/button-task`);
    const history = page.getByRole('region', { name: 'Run history' });
    await expect.poll(() => history.locator('tbody tr').count()).toBe(Math.min(before.length, 20));
    expect(await page.locator('.title-row').textContent()).toBe('button-taskdeleted');
    expect(await page.getByText('No task has this name now.').count()).toBe(1);
    // The task's own address answers 404 now, which the browser reports; nothing else may go wrong.
    admin.problems.splice(0, admin.problems.length, ...admin.problems.filter((p) => !/status of 404/.test(p)));
  });

  it('shows a viewer no control the API would refuse, and an operator no Delete', async () => {
    const viewer = await openWatched(ctx.api.base);
    const operator = await openWatched(ctx.api.base);
    watched.push(viewer, operator);
    const controls = /^(Pause|Resume|Trigger|Backfill|Delete|Retry|Cancel|Retry selected.*|Cancel selected.*)$/;
    await signIn(viewer.page, ctx.api.base, keys.viewer, '/tasks/nightly-report');
    await signIn(operator.page, ctx.api.base, keys.operator, '/tasks/nightly-report');
    for (const { page } of [viewer, operator])
      await page.getByRole('region', { name: 'Run history' }).locator('tbody tr').first().waitFor();
    // Each person's session is their own: the page's API calls carry the viewer's.
    expect(
      await viewer.page.evaluate(async () =>
        (await fetch('/v1/me', { headers: { 'x-punctual-console': '1' } })).json(),
      ),
    ).toMatchObject({ role: 'viewer' });
    expect(await viewer.page.getByRole('button', { name: controls }).allTextContents()).toEqual([]);
    expect(await viewer.page.getByRole('link', { name: 'Bull Board' }).count()).toBe(0);
    expect(await operator.page.getByRole('button', { name: controls }).allTextContents()).toEqual([
      'Pause',
      'Trigger',
      'Backfill',
      'Retry',
    ]);
    expect(await operator.page.getByRole('link', { name: 'Bull Board' }).count()).toBe(0);

    await viewer.page.goto(`${ctx.api.base}/dead-letters`);
    await expect.poll(() => viewer.page.locator('tbody tr').count()).toBe(4);
    expect(await viewer.page.getByRole('button', { name: controls }).count()).toBe(0);
    expect(await viewer.page.getByRole('checkbox').count()).toBe(0);
    await operator.page.goto(`${ctx.api.base}/dead-letters`);
    await expect.poll(() => operator.page.getByRole('button', { name: 'Retry', exact: true }).count()).toBe(4);
  });

  it('retries and cancels dead letters one by one and in bulk', async () => {
    const { page } = admin;
    await page.getByRole('link', { name: 'Dead letters' }).click();
    await page.waitForURL(`${ctx.api.base}/dead-letters`);
    await expect.poll(() => page.locator('tbody tr').count()).toBe(4);
    await page.screenshot({ path: `${SCREENSHOTS}/dead-letters.png`, fullPage: true });
    const deadOf = async (task: string) => (await runsOf(task)).filter((r) => r.status === 'dead');
    const [nightlyDead] = await deadOf('nightly-report');

    await row(page, 'nightly-report').getByRole('button', { name: 'Retry', exact: true }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(3);
    expect((await call('GET', `/v1/executions/${nightlyDead!.id}`)).body.status).toBe('retrying');

    await page.getByLabel('Select all').check();
    await page.getByRole('button', { name: 'Retry selected (3)' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('3 runs retried.');
    expect(await deadOf('flaky-export')).toEqual([]);
    expect((await runsOf('flaky-export')).map((r) => r.status)).toEqual(['retrying', 'retrying', 'retrying']);

    await page.getByRole('link', { name: 'Retrying' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(4);
    await row(page, 'nightly-report').getByRole('button', { name: 'Cancel', exact: true }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(3);
    expect((await call('GET', `/v1/executions/${nightlyDead!.id}`)).body.status).toBe('cancelled');
    for (const box of await page.getByRole('checkbox', { name: /^Select run of flaky-export/ }).all())
      await box.check();
    await page.getByRole('button', { name: 'Cancel selected (3)' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('3 runs cancelled.');
    expect((await runsOf('flaky-export')).map((r) => r.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    await page.getByText('No run is waiting for another attempt.').waitFor();
  });

  it('shows the cluster: leader and epoch, workers and handlers, queue depth, clock offsets; links Bull Board', async () => {
    const { page } = admin;
    await page.getByRole('link', { name: 'Cluster' }).click();
    const leader = page.getByRole('region', { name: 'Leader' });
    await expect.poll(() => leader.textContent()).toContain('sched-1:42');
    expect(await leader.textContent()).toMatch(/Epoch\s*7/);
    expect(await page.getByRole('region', { name: 'Workers' }).textContent()).toMatch(/host-a:1.*http.*noop.*50/);
    const offsets = (await page.getByRole('region', { name: 'Clock offsets' }).textContent())!;
    expect(offsets).toContain('sched-1:42');
    expect(offsets).toContain(ctx.api.config.instanceId);
    expect(await page.getByLabel('Executions by status').textContent()).toMatch(/scheduled\d+/);
    // One shard: no shard map.
    expect(await page.getByRole('table', { name: 'Shard map' }).count()).toBe(0);
    // Flow control: no key in use yet, then one run holding billing-api and two held back on it.
    expect(await page.getByRole('region', { name: 'Flow control' }).textContent()).toContain(
      'No run holds or waits on a flow-control key.',
    );
    const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: 'nightly-report' } });
    const now = Date.now();
    const flowRun = (status: 'running' | 'queued', minutesAhead: number) => ({
      id: executionIdFor(new Date(now + minutesAhead * 60_000)),
      taskId: task.id,
      taskName: task.name,
      scheduledFor: new Date(now + minutesAhead * 60_000),
      fireAt: new Date(now + minutesAhead * 60_000),
      taskVersion: task.version,
      status,
      concurrencyKey: 'billing-api',
      ...(status === 'running' ? { attempt: 1, leaseUntil: new Date(Date.now() + 600_000) } : { heldAt: new Date() }),
    });
    const flowRows = [flowRun('running', 1), flowRun('queued', 2), flowRun('queued', 3)];
    await ctx.db.historyAt(...flowRows.map((r) => r.scheduledFor));
    await ctx.db.prisma.taskExecution.createMany({ data: flowRows });
    try {
      await page.reload();
      const keys = page.getByRole('table', { name: 'Flow-control keys' });
      await expect.poll(() => keys.getByRole('row').allTextContents()).toEqual(['KeyRunningWaiting', 'billing-api12']);
      await page.screenshot({ path: `${SCREENSHOTS}/cluster.png`, fullPage: true });
    } finally {
      await ctx.db.prisma.taskExecution.deleteMany({ where: { id: { in: flowRows.map((r) => r.id) } } });
    }

    // Three shards, one without a leader yet: the shard map lists them.
    await ctx.db.prisma.schedulerState.update({ where: { id: 1 }, data: { shards: 3 } });
    await ctx.db.prisma.schedulerState.createMany({
      data: [{ id: 2, epoch: 4n, leaderId: 'sched-2:7', acquiredAt: new Date(), heartbeatAt: new Date() }, { id: 3 }],
    });
    try {
      await page.reload();
      const map = page.getByRole('table', { name: 'Shard map' });
      await expect.poll(() => map.textContent()).toContain('sched-2:7');
      const rows = (await map.getByRole('row').allTextContents()).slice(1);
      // Shard, leader, epoch, then the heartbeat to the second with its zone.
      const time = String.raw`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+`;
      expect(rows).toEqual([
        expect.stringMatching(new RegExp(`^0sched-1:427${time}`)),
        expect.stringMatching(new RegExp(`^1sched-2:74${time}`)),
        '2none0—',
      ]);
      expect(await page.getByRole('region', { name: 'Leader of shard 0' }).textContent()).toContain('sched-1:42');
      await page.screenshot({ path: `${SCREENSHOTS}/cluster-shards.png`, fullPage: true });
    } finally {
      await ctx.db.prisma.schedulerState.deleteMany({ where: { id: { gt: 1 } } });
      await ctx.db.prisma.schedulerState.update({ where: { id: 1 }, data: { shards: null } });
    }

    const board = page.getByRole('link', { name: 'Bull Board' });
    expect(await board.getAttribute('href')).toBe('/admin/queues');
    expect((await page.request.get(`${ctx.api.base}/admin/queues`)).status()).toBe(200);
  });

  it('fits a 375 px screen on every page without scrolling sideways', async () => {
    const narrow = await openWatched(ctx.api.base, {
      viewport: { width: 375, height: 812 },
      isMobile: true,
      hasTouch: true,
    });
    watched.push(narrow);
    await narrow.page.goto(`${ctx.api.base}/admin/login`);
    expect(await fitsViewport(narrow.page)).toBe(true);
    await signIn(narrow.page, ctx.api.base, ctx.api.config.adminApiKey!);
    const pages: [string, string, () => Promise<unknown>][] = [
      ['/', 'tasks', () => narrow.page.locator('tbody tr').first().waitFor()],
      ['/tasks/nightly-report', 'task', () => narrow.page.locator('.chart canvas').first().waitFor()],
      ['/dead-letters', 'dead-letters', () => narrow.page.getByRole('heading', { name: 'Dead letters' }).waitFor()],
      ['/cluster', 'cluster', () => narrow.page.getByText('sched-1:42').first().waitFor()],
      ['/calendars', 'calendars', () => narrow.page.locator('tbody tr').first().waitFor()],
      ['/calendars/console-holidays', 'calendar', () => narrow.page.locator('td.excluded-day').first().waitFor()],
    ];
    for (const [path, name, ready] of pages) {
      await narrow.page.goto(`${ctx.api.base}${path}`);
      await ready();
      expect(await fitsViewport(narrow.page), path).toBe(true);
      await narrow.page.screenshot({ path: `${SCREENSHOTS}/${name}-375.png` });
    }
  });
});

/** `2026-03-29`: the local date of `at` in `zone`. */
function localDate(at: Date, zone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    at,
  );
}

/** The calendar date `days` after `date` (`2026-03-29`). */
function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/** Berlin's short zone name at noon of `date`, as the console writes it (`GMT+1`, `GMT+2`). */
function zoneAbbreviation(date: string): string {
  const at = new Date(`${date}T12:00:00Z`);
  return new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Berlin', timeZoneName: 'shortOffset' })
    .formatToParts(at)
    .find((p) => p.type === 'timeZoneName')!.value;
}
