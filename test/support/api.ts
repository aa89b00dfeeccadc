import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AddressInfo } from 'node:net';
import { ApiModule } from '../../apps/api/src/api.module.js';
import type { Sandbox } from './isolation.js';

/** The API module served in-process on a free port, against the sandbox's database and Redis. */
export async function startApi(sandbox: Sandbox) {
  const config = sandbox.config();
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config, config.adminApiKey!), { logger: false, bodyParser: false });
  app.useBodyParser('json', { limit: '256kb' });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${config.adminApiKey}`, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { method, headers: { ...headers, ...extra }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as any) : null };
  };
  return { app, base, call, close: () => app.close() };
}
