import type { Page } from 'playwright-core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import {
  BROWSER_ZONE,
  insertRuns,
  openWatched,
  requireBuiltConsole,
  SCREENSHOTS,
  signIn,
  type WatchedPage,
} from './console-support.js';

/**
 * The run chart in browsers of other locales, the POSIX one the packaged Chromium reports by
 * default among them (`en-US@posix`, which `Intl` refuses): it draws, its times are the console's
 * (24-hour, zone named) whatever the locale, and a task with two hours of runs is drawn over those
 * two hours rather than squeezed into a corner of the day.
 */
const LOCALES = ['en-US@posix', 'de-DE', 'ja-JP', 'ar-EG'];

/** What the chart writes on its canvases, recorded as it draws (a string: the tests have no DOM types). */
const RECORD_CANVAS_TEXT = `
  window.__chartTexts = [];
  const fillText = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__chartTexts.push(String(text));
    return fillText.call(this, text, ...rest);
  };
`;
const canvasTexts = (page: Page) => page.evaluate('window.__chartTexts.slice()') as Promise<string[]>;

/** A time as the console writes it: `2026-06-01 09:00:00 GMT-4`. */
const CONSOLE_TIME = String.raw`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (?:UTC|GMT[+-]\d{1,2}(?::\d{2})?)`;
/** What a 12-hour clock or a localised one would leave behind: am/pm, 午前/午後, Arabic script or digits. */
const NOT_24_HOUR = /\b(am|pm)\b|\d\s?(am|pm)|[午前後]|[\u0600-\u06FF]/i;

describe('the run chart in other locales', () => {
  const ctx = useApiSandbox();
  const call = (method: string, path: string, body?: unknown) => ctx.api.call(method, path, body);
  const runTimes = async (task: string) =>
    ((await call('GET', `/v1/tasks/${task}/executions?limit=500`)).body.items as { scheduledFor: string }[]).map((r) =>
      Date.parse(r.scheduledFor),
    );
  let current: WatchedPage | undefined;

  beforeAll(async () => {
    requireBuiltConsole();
    const tasks = [
      // New: two hours of runs (150 to 30 minutes ago), in a zone other than the browser's.
      { name: 'fresh-task', handler: 'noop', schedule: { cron: '0,30 * * * *', timezone: 'Asia/Tokyo' } },
      // Running all day: its runs fill the 24 hours.
      { name: 'steady-task', handler: 'noop', schedule: { cron: '0 * * * *', timezone: 'Europe/Berlin' } },
    ];
    expect((await call('POST', '/v1/tasks:batch', { tasks })).status).toBe(200);
    await insertRuns(ctx, 'fresh-task', [
      { minutesAgo: 150, status: 'succeeded', lagMs: 4, durationMs: 120 },
      { minutesAgo: 120, status: 'succeeded', lagMs: 9, durationMs: 340 },
      { minutesAgo: 90, status: 'dead', lagMs: 12, durationMs: 2_400 },
      { minutesAgo: 60, status: 'succeeded', lagMs: 250, durationMs: 900 },
      { minutesAgo: 30, status: 'skipped' },
    ]);
    await insertRuns(
      ctx,
      'steady-task',
      [23 * 60, 18 * 60, 12 * 60, 6 * 60, 60].map((minutesAgo) => ({
        minutesAgo,
        status: 'succeeded' as const,
        lagMs: 5,
        durationMs: 200,
      })),
    );
  });
  afterEach(async () => {
    const problems = current?.problems.splice(0) ?? [];
    await current?.browser.close();
    current = undefined;
    expect(problems).toEqual([]);
  });

  /** Opens `task`'s page and waits for its chart: two canvases and a summary; no error in its place. */
  async function openChart(page: Page, task: string) {
    await page.goto(`${ctx.api.base}/tasks/${task}`);
    const chart = page.getByRole('region', { name: 'Last 24 hours' });
    await expect.poll(() => chart.locator('canvas').count()).toBe(2);
    await expect.poll(async () => (await canvasTexts(page)).some((t) => /^\d{2}:\d{2}$/.test(t))).toBe(true);
    expect(await page.locator('body').textContent()).not.toContain('Invalid language tag');
    expect(await chart.getByRole('alert').count()).toBe(0);
    return { chart, summary: (await chart.locator('.chart-summary').textContent())! };
  }

  /** The time labels of the x axis (`09:00`, `09:00:30`), its dates and its zone, as drawn. */
  function xAxis(texts: string[]) {
    return {
      clocks: texts.filter((t) => /^\d{1,2}:\d{2}(:\d{2})?$/.test(t)),
      dates: texts.filter((t) => /^\d{4}-\d{2}-\d{2}$/.test(t)),
      zones: texts.filter((t) => t.includes(BROWSER_ZONE)),
    };
  }

  for (const locale of LOCALES) {
    it(`draws in ${locale}, with 24-hour times in the browser's zone, fitted to a new task's runs`, async () => {
      current = await openWatched(ctx.api.base, { locale });
      const { page } = current;
      await page.addInitScript(RECORD_CANVAS_TEXT);
      await signIn(page, ctx.api.base, ctx.api.config.adminApiKey!, '/tasks/fresh-task');
      // The browser reports the locale asked for (the chart borrows a safe one only while it loads).
      expect(await page.evaluate('navigator.language')).toBe(locale);

      // Two hours of runs: the axis spans them and a tenth either side, not the whole day.
      const fresh = await openChart(page, 'fresh-task');
      expect(fresh.summary).toMatch(
        /^5 runs in the last 24 hours: (?=[^.]*\b3 succeeded\b)(?=[^.]*\b1 dead\b)(?=[^.]*\b1 skipped\b)/,
      );
      const stretch = new RegExp(
        `The chart is scaled to the runs, which span 2 h: it shows (${CONSOLE_TIME}) to (${CONSOLE_TIME})\\.`,
      ).exec(fresh.summary);
      expect(stretch, fresh.summary).not.toBeNull();
      expect(fresh.summary).not.toMatch(NOT_24_HOUR);
      const [from, to] = [stretch![1]!, stretch![2]!];
      expect(from).toMatch(/ GMT-[45]$/);
      // 2 h and a tenth either side, widened to whole minutes (unless the clocks change in between).
      const wall = (text: string) => Date.parse(`${text.slice(0, 10)}T${text.slice(11, 19)}Z`);
      if (from.slice(-3) === to.slice(-3)) expect((wall(to) - wall(from)) / 60_000).toBeOneOf([144, 145, 146]);
      const axis = xAxis(await canvasTexts(page));
      expect(axis.clocks.length).toBeGreaterThan(2);
      expect(axis.clocks.every((clock) => /^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$/.test(clock))).toBe(true);
      // Every tick lies among the runs (their first, less 15 minutes, to their last, plus 15).
      const times = await runTimes('fresh-task');
      const allowed = wallClocks(Math.min(...times) - 15 * 60_000, Math.max(...times) + 15 * 60_000, BROWSER_ZONE);
      expect(axis.clocks.filter((clock) => !allowed.has(clock.slice(0, 5)))).toEqual([]);
      expect(axis.dates.length).toBeGreaterThan(0);
      expect(axis.zones.every((label) => /^GMT-[45](\/GMT-[45])? \(America\/New_York\)$/.test(label))).toBe(true);
      expect(axis.zones.length).toBeGreaterThanOrEqual(2);
      expect((await canvasTexts(page)).filter((t) => NOT_24_HOUR.test(t))).toEqual([]);
      await fresh.chart.screenshot({ path: `${SCREENSHOTS}/chart-${locale.replace(/[^A-Za-z]+/g, '-')}.png` });

      // Runs all day: the whole 24 hours.
      const steady = await openChart(page, 'steady-task');
      expect(steady.summary).toContain('5 runs in the last 24 hours: 5 succeeded.');
      expect(steady.summary).toMatch(
        new RegExp(`The chart shows the whole 24 hours, (${CONSOLE_TIME}) to (${CONSOLE_TIME})\\.`),
      );
      expect(steady.summary).not.toMatch(NOT_24_HOUR);
      const day = xAxis(await canvasTexts(page));
      expect(day.clocks.length).toBeGreaterThan(2);
      expect(day.clocks.every((clock) => /^([01]\d|2[0-3]):[0-5]\d$/.test(clock))).toBe(true);
      expect((await canvasTexts(page)).filter((t) => NOT_24_HOUR.test(t))).toEqual([]);

      // The dead letter: its times in the task's zone (Tokyo) and in the browser's.
      await page.goto(`${ctx.api.base}/dead-letters`);
      const row = page.locator('tbody tr').filter({ hasText: 'fresh-task' });
      await expect
        .poll(() => row.locator('td[data-label="Slot"]').textContent())
        .toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} GMT\+9 yours: \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} GMT-[45]$/);
      expect(await row.locator('td[data-label="Finished"]').textContent()).toMatch(/GMT\+9 yours: .* GMT-[45]$/);
    });
  }
});

/** Every `HH:MM` the wall clock of `zone` shows from `from` to `to` (epoch ms). */
function wallClocks(from: number, to: number, zone: string): Set<string> {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  });
  const clocks = new Set<string>();
  for (let at = Math.floor(from / 60_000) * 60_000; at <= to; at += 60_000) clocks.add(format.format(at));
  return clocks;
}
