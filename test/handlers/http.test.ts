import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../libs/config/src/index.js';
import { HttpHandler, UnrecoverableError } from '../../libs/handlers/src/index.js';

const SECRET = 'task-signing-secret';
let server: Server;
let port: number;
let connections = 0;
let requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const [, status = '200', extra] = req.url!.split('/');
      if (extra === 'slow') return void setTimeout(() => res.end('late'), 3000);
      if (extra === 'huge') return void res.end('x'.repeat(1024 * 1024));
      if (status === '302') res.setHeader('location', `http://127.0.0.1:${port}/200/redirected`);
      res.statusCode = Number(status);
      res.setHeader('content-type', 'text/plain');
      res.end(`answer ${status}`);
    });
  });
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  requests = [];
  connections = 0;
});

function context(payload: unknown, timeoutMs = 2000) {
  return {
    execution: { id: 'd9b2d7e4-0000-4000-8000-000000000001' },
    task: { secret: SECRET, timeoutMs },
    payload,
    attempt: 1,
    signal: new AbortController().signal,
    log: { info() {}, warn() {}, error() {} },
    progress: async () => undefined,
  } as never;
}

const allowed = new HttpHandler(loadConfig({ HTTP_ALLOW_HOSTS: '127.0.0.1,localhost' }));
const guarded = new HttpHandler(loadConfig({}));

describe('http handler against a local server (allowed by HTTP_ALLOW_HOSTS)', () => {
  it('sends the body, Idempotency-Key and an HMAC signature of the exact bytes', async () => {
    const result = await allowed.run(context({ url: `http://127.0.0.1:${port}/200/hook`, body: { hello: 'world' }, headers: { 'x-extra': '1' } }));
    expect(result).toMatchObject({ status: 200, body: 'answer 200', truncated: false });
    const [req] = requests;
    expect(req!.method).toBe('POST');
    expect(req!.body).toBe('{"hello":"world"}');
    expect(req!.headers['idempotency-key']).toBe('d9b2d7e4-0000-4000-8000-000000000001');
    expect(req!.headers['x-extra']).toBe('1');
    expect(req!.headers['x-punctual-signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(req!.body).digest('hex')}`);
  });

  it('does not follow a redirect: it is a failure, and the target is never called', async () => {
    await expect(allowed.run(context({ url: `http://127.0.0.1:${port}/302/away` }))).rejects.toThrow(/302.*not followed/);
    expect(requests.map((r) => r.url)).toEqual(['/302/away']);
  });

  it('retries 5xx, 408 and 429; sends other 4xx to the dead letter', async () => {
    for (const status of [500, 503, 408, 429]) {
      const error = await allowed.run(context({ url: `http://127.0.0.1:${port}/${status}/x` })).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(UnrecoverableError);
    }
    for (const status of [400, 404, 410]) {
      await expect(allowed.run(context({ url: `http://127.0.0.1:${port}/${status}/x` }))).rejects.toBeInstanceOf(UnrecoverableError);
    }
  });

  it('times out, and caps a huge response', async () => {
    await expect(allowed.run(context({ url: `http://127.0.0.1:${port}/200/slow`, timeoutMs: 300 }))).rejects.toThrow(/timed out/);
    const huge = (await allowed.run(context({ url: `http://127.0.0.1:${port}/200/huge` }))) as { body: string; truncated: boolean };
    expect(huge.truncated).toBe(true);
    expect(huge.body.length).toBe(64 * 1024);
  });

  it('refuses a malformed payload as unrecoverable', async () => {
    await expect(allowed.run(context({ nope: 1 }))).rejects.toBeInstanceOf(UnrecoverableError);
    await expect(allowed.run(context({ url: 'http://127.0.0.1/', method: 'TRACE' }))).rejects.toBeInstanceOf(UnrecoverableError);
  });
});

describe('http handler SSRF guard (no allow list)', () => {
  const targets = () => [
    `http://127.0.0.1:${port}/200/x`,
    // a host name that resolves to loopback
    `http://localhost:${port}/200/x`,
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    'http://192.168.1.1/',
    `http://[::1]:${port}/200/x`,
    `http://[::ffff:127.0.0.1]:${port}/200/x`,
    `http://2130706433:${port}/200/x`,
    `http://0x7f000001:${port}/200/x`,
  ];

  it('refuses every blocked target with a clear error, and never connects', async () => {
    for (const url of targets()) {
      const error = await guarded.run(context({ url })).catch((e: Error) => e);
      expect(error, url).toBeInstanceOf(UnrecoverableError);
      expect((error as Error).message, url).toMatch(/is (a|an) .*address; add the host to HTTP_ALLOW_HOSTS/);
    }
    expect(connections).toBe(0);
    expect(requests).toEqual([]);
  });
});
