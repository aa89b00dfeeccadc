import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { openWatched, requireBuiltConsole, signIn, type WatchedPage } from './console-support.js';

/** The console's namespace picker in a real headless Chromium: each namespace's tasks, and nothing of another's. */
describe('the console in namespaces', () => {
  const ctx = useApiSandbox();
  const watched: WatchedPage[] = [];
  const call = (method: string, path: string, body?: unknown) => ctx.api.call(method, path, body);
  let scopedKey = '';

  beforeAll(async () => {
    requireBuiltConsole();
    for (const ns of ['team-a', 'team-b']) expect((await call('PUT', `/v1/namespaces/${ns}`, {})).status).toBe(201);
    for (const ns of ['default', 'team-a', 'team-b']) {
      const task = {
        name: 'report',
        description: `the report of ${ns}`,
        handler: 'noop',
        schedule: { cron: '0 9 * * *' },
        labels: { owner: `owner-of-${ns}` },
      };
      expect((await call('POST', `/v1/tasks?namespace=${ns}`, task)).status).toBe(201);
    }
    scopedKey = (await call('POST', '/v1/api-keys', { name: 'team-b-viewer', role: 'viewer', namespaces: ['team-b'] }))
      .body.key;
  });
  afterEach(() => {
    for (const w of watched) expect(w.problems.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    await Promise.all(watched.map((w) => w.browser.close()));
  });

  it('picks a namespace: its tasks, its task pages, and back', async () => {
    const admin = await openWatched(ctx.api.base);
    watched.push(admin);
    const { page } = admin;
    await signIn(page, ctx.api.base, ctx.api.config.adminApiKey!);
    const picker = page.getByLabel('Namespace');
    await expect.poll(() => picker.locator('option').allTextContents()).toEqual(['default', 'team-a', 'team-b']);
    expect(await picker.inputValue()).toBe('default');
    await expect.poll(() => page.locator('tbody').textContent()).toContain('owner-of-default');

    await Promise.all([page.waitForURL(`${ctx.api.base}/?namespace=team-a`), picker.selectOption('team-a')]);
    await expect.poll(() => page.locator('tbody').textContent()).toContain('owner-of-team-a');
    expect(await page.locator('tbody').textContent()).not.toContain('owner-of-default');
    // A task's page, reached by its link, is the namespace's task.
    await page.getByRole('link', { name: 'report', exact: true }).first().click();
    await page.waitForURL(/\/tasks\/report/);
    await expect.poll(() => page.locator('main').textContent()).toContain('the report of team-a');
    expect(await page.getByLabel('Namespace').inputValue()).toBe('team-a');

    await Promise.all([
      page.waitForURL(`${ctx.api.base}/?namespace=team-b`),
      page.getByLabel('Namespace').selectOption('team-b'),
    ]);
    await expect.poll(() => page.locator('tbody').textContent()).toContain('owner-of-team-b');
  });

  it('takes a key scoped to one namespace there, and offers only the namespaces it may see', async () => {
    const viewer = await openWatched(ctx.api.base);
    watched.push(viewer);
    const { page } = viewer;
    // Signed in at / (the default namespace, which the key may not see): taken to its namespace.
    await page.goto(`${ctx.api.base}/`);
    await page.getByLabel('API key').fill(scopedKey);
    await Promise.all([page.waitForURL(/namespace=team-b/), page.getByRole('button', { name: 'Sign in' }).click()]);
    const picker = page.getByLabel('Namespace');
    await expect.poll(() => picker.locator('option').allTextContents()).toEqual(['team-b']);
    await expect.poll(() => page.locator('tbody').textContent()).toContain('owner-of-team-b');
    const text = await page.locator('body').textContent();
    expect(text).not.toContain('owner-of-team-a');
    expect(text).not.toContain('owner-of-default');
  });

  it('past a page of namespaces, finds one by the start of its name', async () => {
    // 100 more: the first page (100) no longer holds them all.
    for (let i = 0; i < 100; i++)
      expect((await call('PUT', `/v1/namespaces/many-${String(i).padStart(3, '0')}`, {})).status).toBe(201);
    const admin = await openWatched(ctx.api.base);
    watched.push(admin);
    const { page } = admin;
    await signIn(page, ctx.api.base, ctx.api.config.adminApiKey!);
    const field = page.getByLabel('Namespace');
    await expect.poll(() => field.evaluate((e) => e.tagName)).toBe('INPUT');
    await field.fill('team-');
    const offered = () =>
      page.locator('#namespace-choices option').evaluateAll((o) => o.map((e) => e.getAttribute('value')));
    await expect.poll(offered).toEqual(['team-a', 'team-b']);
    await field.fill('team-b');
    await expect.poll(offered).toEqual(['team-b']);
    await Promise.all([page.waitForURL(`${ctx.api.base}/?namespace=team-b`), field.press('Enter')]);
    await expect.poll(() => page.locator('tbody').textContent()).toContain('owner-of-team-b');
  });
});
