import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

/** Signs in at /admin/login with `key`; the session cookie (`name=value`). */
async function signIn(base: string, key: string, next?: string): Promise<{ cookie: string; location: string | null }> {
  const res = await fetch(`${base}/admin/login${next ? `?next=${encodeURIComponent(next)}` : ''}`, {
    method: 'POST',
    body: new URLSearchParams({ key }),
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  return { cookie: res.headers.get('set-cookie')!.split(';')[0]!, location: res.headers.get('location') };
}

describe('the console behind a browser session', () => {
  const ctx = useApiSandbox();

  it('sends a browser without a session to the login form and back, never to another origin', async () => {
    for (const path of ['/', '/tasks/nightly', '/dead-letters', '/cluster']) {
      const res = await fetch(`${ctx.api.base}${path}`, { redirect: 'manual', headers: { accept: 'text/html' } });
      expect(res.status, path).toBe(302);
      expect(res.headers.get('location')).toBe(`/admin/login?next=${encodeURIComponent(path)}`);
    }
    expect((await signIn(ctx.api.base, ctx.api.config.adminApiKey!, '/tasks/nightly?x=1')).location).toBe(
      '/tasks/nightly?x=1',
    );
    expect((await signIn(ctx.api.base, ctx.api.config.adminApiKey!)).location).toBe('/');
    for (const evil of ['//evil.example/x', '/\\evil.example', 'https://evil.example/', '/ok\\..']) {
      expect((await signIn(ctx.api.base, ctx.api.config.adminApiKey!, evil)).location, evil).toBe('/');
    }
  });

  it('serves the login form and the console pages under a strict Content-Security-Policy', async () => {
    const login = await fetch(`${ctx.api.base}/admin/login`);
    expect(login.status).toBe(200);
    expect(await login.text()).toMatch(/<label[^>]*for="key"[^>]*>API key<\/label>/);
    const { cookie } = await signIn(ctx.api.base, ctx.api.config.adminApiKey!);
    const page = await fetch(`${ctx.api.base}/`, { headers: { cookie } });
    // 503 only when the console was not built; either way the page carries the policy.
    expect([200, 503]).toContain(page.status);
    for (const res of [login, page]) {
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    }
    if (page.status === 200) {
      // Its files come from this server, named by their content and cached for good; no inline script.
      const html = await page.text();
      expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
      const script = /<script[^>]*src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
      const asset = await fetch(`${ctx.api.base}${script}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toMatch(/javascript/);
      expect(asset.headers.get('cache-control')).toMatch(/immutable/);
    }
    const missing = await fetch(`${ctx.api.base}/assets/missing.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('lets the console call /v1 with its session and header only, with the role of the key that signed in', async () => {
    const viewerKey = (await ctx.api.call('POST', '/v1/api-keys', { name: 'console-viewer', role: 'viewer' })).body
      .key as string;
    await ctx.api.call('POST', '/v1/tasks', { name: 'console-task', handler: 'noop', schedule: { cron: '0 9 * * *' } });
    const { cookie } = await signIn(ctx.api.base, viewerKey);
    const call = (method: string, path: string, headers: Record<string, string>) =>
      fetch(`${ctx.api.base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        body: method === 'GET' ? undefined : '{}',
      });

    // A cookie alone (what a cross-site form or image would carry) is not enough.
    expect((await call('GET', '/v1/tasks', { cookie })).status).toBe(401);
    expect((await call('GET', '/v1/tasks', { 'x-punctual-console': '1' })).status).toBe(401);
    const console = { cookie, 'x-punctual-console': '1' };
    expect((await call('GET', '/v1/tasks', console)).status).toBe(200);
    expect(await (await call('GET', '/v1/me', console)).json()).toMatchObject({ role: 'viewer' });
    expect((await call('POST', '/v1/tasks/console-task/pause', console)).status).toBe(403);

    // Signing out ends the session for the API too.
    const out = await fetch(`${ctx.api.base}/admin/logout`, {
      method: 'POST',
      headers: { cookie },
      redirect: 'manual',
    });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/punctual_session=;/);
    expect((await call('GET', '/v1/tasks', console)).status).toBe(401);
  });

  it('answers who the caller is, and as many next fire times as asked', async () => {
    expect((await ctx.api.call('GET', '/v1/me')).body).toEqual({
      actor: 'admin-api-key',
      role: 'admin',
      namespaces: null,
    });
    await ctx.api.call('POST', '/v1/tasks', {
      name: 'twenty',
      handler: 'noop',
      schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
    });
    expect((await ctx.api.call('GET', '/v1/tasks/twenty')).body.upcoming).toHaveLength(5);
    const twenty = (await ctx.api.call('GET', '/v1/tasks/twenty?upcoming=20')).body.upcoming as string[];
    expect(twenty).toHaveLength(20);
    expect(new Set(twenty).size).toBe(20);
    expect((await ctx.api.call('GET', '/v1/tasks/twenty?upcoming=101')).status).toBe(422);
  });
});
