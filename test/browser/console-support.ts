import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { expect } from 'vitest';
import type { ApiSandbox } from '../support/api-sandbox.js';
import { launchChromium } from '../support/browser.mjs';

/** Where the console tests leave their screenshots (README: "Console"). */
export const SCREENSHOTS = fileURLToPath(new URL('../artifacts/screenshots/console', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/console/index.html', import.meta.url));

/** The browser's zone differs from the tasks' on purpose: the console shows both. */
export const BROWSER_ZONE = 'America/New_York';

export function requireBuiltConsole(): void {
  if (!existsSync(BUILT))
    throw new Error('the console is not built: run `npm run build` (or `npm run build:console`) first');
  mkdirSync(SCREENSHOTS, { recursive: true });
}

/** A page that records what must never happen: console errors, uncaught exceptions, requests to another origin. */
export interface WatchedPage {
  browser: Browser;
  page: Page;
  problems: string[];
}

/**
 * A browser of its own for each person signing in: the packaged Chromium runs as a single process,
 * where a page's `fetch` may carry the cookies of another context of the same browser.
 */
export async function openWatched(base: string, options: BrowserContextOptions = {}): Promise<WatchedPage> {
  const browser = await launchChromium();
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    timezoneId: BROWSER_ZONE,
    locale: 'en-US',
    ...options,
  });
  const page = await context.newPage();
  const problems: string[] = [];
  const origin = new URL(base).origin;
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`exception: ${error.message}`));
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.origin !== origin) problems.push(`request to another origin: ${request.url()}`);
  });
  return { browser, page, problems };
}

/** Opens `path`, is sent to the login form, signs in with `key` and lands back on `path`. */
export async function signIn(page: Page, base: string, key: string, path = '/'): Promise<void> {
  await page.goto(`${base}${path}`);
  expect(new URL(page.url()).pathname).toBe('/admin/login');
  await page.getByLabel('API key').fill(key);
  await Promise.all([page.waitForURL(`${base}${path}`), page.getByRole('button', { name: 'Sign in' }).click()]);
}

/** True when the page is no wider than its viewport (nothing to scroll sideways). */
export async function fitsViewport(page: Page): Promise<boolean> {
  // Runs in the page; written as a string because the tests are compiled without the DOM's types.
  return page.evaluate('document.documentElement.scrollWidth <= window.innerWidth') as Promise<boolean>;
}

type Status = 'succeeded' | 'dead' | 'skipped' | 'retrying' | 'running' | 'missed';

/**
 * Inserts finished runs of `task` as a worker would have left them, with the events a history row
 * is written for (release, first claim and success are read from the row). Returns their ids.
 */
export async function insertRuns(
  ctx: ApiSandbox,
  taskName: string,
  runs: { minutesAgo: number; status: Status; lagMs?: number; durationMs?: number; error?: string }[],
): Promise<string[]> {
  const task = await ctx.db.prisma.task.findUniqueOrThrow({ where: { name: taskName } });
  const rows = runs.map((run) => {
    const scheduledFor = new Date(Date.now() - run.minutesAgo * 60_000);
    const started =
      run.status === 'skipped' || run.status === 'missed' ? null : new Date(scheduledFor.getTime() + (run.lagMs ?? 5));
    const finished =
      started && run.status !== 'running' && run.status !== 'retrying'
        ? new Date(started.getTime() + (run.durationMs ?? 100))
        : null;
    return {
      id: randomUUID(),
      taskId: task.id,
      taskName,
      scheduledFor,
      fireAt: scheduledFor,
      taskVersion: task.version,
      status: run.status,
      skipReason: run.status === 'skipped' ? ('overlap' as const) : null,
      attempt: started ? (run.status === 'dead' ? 3 : 1) : 0,
      workerId: started ? 'host-a:1' : null,
      queuedAt: started ? scheduledFor : null,
      startedAt: started,
      finishedAt: finished,
      error: run.error ?? (run.status === 'dead' ? 'HTTP 500 from the endpoint' : null),
    };
  });
  await ctx.db.historyAt(...rows.map((r) => r.scheduledFor));
  await ctx.db.prisma.taskExecution.createMany({ data: rows });
  await ctx.db.prisma.executionEvent.createMany({
    data: rows.flatMap((row) => [
      {
        executionId: row.id,
        scheduledFor: row.scheduledFor,
        fromStatus: null,
        toStatus: 'scheduled' as const,
        at: new Date(row.scheduledFor.getTime() - 60_000),
      },
      ...(row.startedAt && row.attempt > 1
        ? [
            {
              executionId: row.id,
              scheduledFor: row.scheduledFor,
              fromStatus: 'retrying' as const,
              toStatus: 'running' as const,
              at: row.startedAt,
              workerId: row.workerId,
              detail: { attempt: row.attempt },
            },
          ]
        : []),
      ...(row.finishedAt && row.status !== 'succeeded'
        ? [
            {
              executionId: row.id,
              scheduledFor: row.scheduledFor,
              fromStatus: 'running' as const,
              toStatus: row.status,
              at: row.finishedAt,
              workerId: row.workerId,
              detail: row.error ? { error: row.error } : undefined,
            },
          ]
        : []),
    ]),
  });
  return rows.map((r) => r.id);
}

/** The first noon (UTC) from now on at which `zone`'s offset differs from today's: its next clock change. */
export function nextClockChange(zone: string): Date {
  const offset = (at: Date) =>
    new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(at)
      .find((p) => p.type === 'timeZoneName')!.value;
  const today = new Date(new Date().toISOString().slice(0, 10) + 'T12:00:00Z');
  for (let day = 1; day <= 400; day += 1) {
    const at = new Date(today.getTime() + day * 86_400_000);
    if (offset(at) !== offset(today)) return at;
  }
  throw new Error(`${zone} has no clock change within a year`);
}
