import type { AddressInfo } from 'node:net';
import { createApiApp } from '../../apps/api/src/api.app.js';
import type { Sandbox } from './isolation.js';

/** The API application served in-process on a free port, against the sandbox's database and Redis. */
export async function startApi(sandbox: Sandbox, overrides: Record<string, string> = {}) {
  const config = sandbox.config(overrides);
  const app = await createApiApp(config, { logger: false });
  await app.listen(0, '127.0.0.1');
  // fetch keeps idle connections 4 s; a server closing them first (Node's default is 5 s, late
  // when a test blocks the shared event loop) races the next request into ECONNRESET.
  app.getHttpServer().keepAliveTimeout = 60_000;
  const { port } = app.getHttpServer().address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
    key = config.adminApiKey,
  ) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...extra,
    };
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON (HTML pages, metrics text)
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return { app, base, call, config, close: () => app.close() };
}
