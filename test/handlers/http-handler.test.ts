import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../libs/config/src/index.js';
import { HttpHandler, UnrecoverableError } from '../../libs/handlers/src/index.js';
import { EXECUTION_ID, fakeContext, rejectionOf, type Route, SECRET, startLocalServer } from './local-server.js';

let server: Awaited<ReturnType<typeof startLocalServer>>;
let redirectTargetHits = 0;
let arrived: () => void = () => undefined;
let hugeFinished: Promise<boolean>;

beforeAll(async () => {
  server = await startLocalServer({
    '/ok': (res) => (res.setHeader('content-type', 'text/plain'), res.end('answer')),
    '/redirect': (res) => (
      res.writeHead(302, { location: `http://127.0.0.1:${server.port}/target?token=t0k` }),
      res.end()
    ),
    '/target': (res) => ((redirectTargetHits += 1), res.end('followed')),
    '/slow': () => arrived(),
    '/slow-body': (res) => res.write('first part, then nothing'),
    '/echo': (res, req) => (
      res.writeHead(400, { 'content-type': 'text/plain' }),
      res.end(`you sent ${req.headers.authorization} and ${req.body}`)
    ),
    '/huge': (res) => {
      hugeFinished = new Promise((resolve) => res.on('close', () => resolve(res.writableFinished)));
      const chunk = 'x'.repeat(64 * 1024);
      let left = 1024; // 64 MiB, more than any socket buffer holds, written only as fast as it is read
      const pump = () => {
        while (left > 0 && !res.destroyed) {
          left -= 1;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (left === 0) res.end();
      };
      pump();
    },
    ...Object.fromEntries([400, 404, 408, 410, 429, 500, 503].map((s) => [`/status/${s}`, statusRoute(s)])),
  });
});
afterAll(() => server.close());

function statusRoute(status: number): Route {
  return (res) => ((res.statusCode = status), res.end(`status ${status}`));
}
beforeEach(() => server.reset());

const handler = new HttpHandler(loadConfig({ HTTP_ALLOW_HOSTS: '127.0.0.1,localhost' }));
const hmac = (body: Buffer) => `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

describe('http handler against a local server allowed by HTTP_ALLOW_HOSTS', () => {
  it('sends a JSON body signed over its exact bytes, with the idempotency and execution headers', async () => {
    const result = await handler.run(
      fakeContext({ url: server.url('/ok?x=1'), body: { hello: 'wörld', n: 1 }, headers: { 'X-Extra': 'yes' } }),
    );
    expect(result).toEqual({
      status: 200,
      headers: { 'content-type': 'text/plain' },
      body: 'answer',
      truncated: false,
    });
    expect(server.requests).toHaveLength(1);
    const [req] = server.requests;
    expect(req!.method).toBe('POST');
    expect(req!.path).toBe('/ok?x=1');
    expect(req!.body.toString('utf8')).toBe('{"hello":"wörld","n":1}');
    expect(req!.headers['x-punctual-signature']).toBe(hmac(req!.body));
    expect(req!.headers).toMatchObject({
      'content-type': 'application/json',
      'idempotency-key': EXECUTION_ID,
      'x-punctual-execution': EXECUTION_ID,
      'user-agent': 'punctual',
      'x-extra': 'yes',
    });
  });

  it('sends a string body as it is, under the content type the payload gives', async () => {
    await handler.run(
      fakeContext({
        url: server.url('/ok'),
        method: 'put',
        body: 'a=1&b=two',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      }),
    );
    const [req] = server.requests;
    expect(req!.method).toBe('PUT');
    expect(req!.body.toString()).toBe('a=1&b=two');
    expect(req!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req!.headers['x-punctual-signature']).toBe(hmac(Buffer.from('a=1&b=two')));
  });

  it('sends a GET without a body, signed over the empty body, to a host allowed by name', async () => {
    await handler.run(fakeContext({ url: `http://localhost:${server.port}/ok`, method: 'GET' }));
    const [req] = server.requests;
    expect(req!.method).toBe('GET');
    expect(req!.headers.host).toBe(`localhost:${server.port}`);
    expect(req!.body).toHaveLength(0);
    expect(req!.headers['x-punctual-signature']).toBe(hmac(Buffer.alloc(0)));
  });

  it('does not follow a redirect: the attempt goes to the dead letter and the target is never called', async () => {
    const error = await rejectionOf(handler.run(fakeContext({ url: server.url('/redirect') })));
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(error.message).toBe(
      `POST 127.0.0.1:${server.port} answered 302, a redirect to http://127.0.0.1:${server.port}; redirects are not followed, call the final URL`,
    );
    expect(server.requests.map((r) => r.path)).toEqual(['/redirect']);
    expect(redirectTargetHits).toBe(0);
  });

  it.each([408, 429, 500, 503])('retries a %i (a plain Error)', async (status) => {
    const error = await rejectionOf(handler.run(fakeContext({ url: server.url(`/status/${status}`) })));
    expect(error).not.toBeInstanceOf(UnrecoverableError);
    expect(error.message).toBe(`POST 127.0.0.1:${server.port} answered ${status}: status ${status}`);
    expect(server.requests).toHaveLength(1);
  });

  it.each([400, 404, 410])('sends a %i straight to the dead letter', async (status) => {
    const error = await rejectionOf(handler.run(fakeContext({ url: server.url(`/status/${status}`) })));
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(server.requests).toHaveLength(1);
  });

  it('times out at the shorter of the payload and task timeouts, as a retryable error', async () => {
    const byPayload = await rejectionOf(handler.run(fakeContext({ url: server.url('/slow'), timeoutMs: 200 })));
    expect(byPayload).not.toBeInstanceOf(UnrecoverableError);
    expect(byPayload.message).toBe(`POST 127.0.0.1:${server.port} timed out after 200 ms`);
    const byTask = await rejectionOf(
      handler.run(fakeContext({ url: server.url('/slow'), timeoutMs: 50_000 }, { taskTimeoutMs: 250 })),
    );
    expect(byTask.message).toBe(`POST 127.0.0.1:${server.port} timed out after 250 ms`);
    // A body that starts and then stalls is bounded by the same timeout.
    const stalled = await rejectionOf(handler.run(fakeContext({ url: server.url('/slow-body'), timeoutMs: 200 })));
    expect(stalled.name).toBe('RequestTimeoutError');
  });

  it('aborts the request when the attempt signal aborts, rejecting with its reason', async () => {
    const controller = new AbortController();
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const running = handler.run(fakeContext({ url: server.url('/slow') }, { signal: controller.signal }));
    await reached;
    const reason = new Error('attempt aborted: cancelled');
    controller.abort(reason);
    expect(await rejectionOf(running)).toBe(reason);
  });

  it('reads a huge response only up to the cap, then stops downloading', async () => {
    const result = (await handler.run(fakeContext({ url: server.url('/huge') }))) as {
      body: string;
      truncated: boolean;
    };
    expect(result.truncated).toBe(true);
    expect(result.body).toMatch(/^x+$/);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(64 * 1024);
    expect(result.body.length).toBeGreaterThan(60 * 1024);
    // The server never got to write the whole 64 MiB: the client hung up.
    expect(await hugeFinished).toBe(false);
  });

  it('a refused connection is retryable', async () => {
    const closed = await startLocalServer({});
    await closed.close();
    const error = await rejectionOf(handler.run(fakeContext({ url: closed.url('/') })));
    expect(error).not.toBeInstanceOf(UnrecoverableError);
    expect(error.message).toMatch(new RegExp(`^POST 127\\.0\\.0\\.1:${closed.port} failed: .*ECONNREFUSED`));
  });

  it('a bad payload is unrecoverable and sends nothing', async () => {
    for (const payload of [
      { nope: 1 },
      { url: server.url('/ok'), method: 'TRACE' },
      { url: server.url('/ok'), headers: { 'X-Punctual-Signature': 'forged' } },
    ]) {
      expect(await rejectionOf(handler.run(fakeContext(payload)))).toBeInstanceOf(UnrecoverableError);
    }
    expect(server.connections).toBe(0);
  });

  it('keeps the signing secret and secret payload fields out of errors and logs', async () => {
    const payload = {
      url: server.url('/echo'),
      headers: { authorization: 'Bearer abc-123-xyz' },
      body: { password: 'pa55word!' },
    };
    const context = fakeContext(payload, { secretFields: ['headers.authorization', 'body.password'] });
    const error = await rejectionOf(handler.run(context));
    expect(server.requests[0]!.headers.authorization).toBe('Bearer abc-123-xyz');
    expect(error.message).toContain('you sent [redacted] and {"password":"[redacted]"}');
    const seen = JSON.stringify([error.message, error.stack, context.logged]);
    for (const secret of [SECRET, 'abc-123-xyz', 'pa55word!']) expect(seen).not.toContain(secret);
    expect(context.logged).toContainEqual({ target: `POST 127.0.0.1:${server.port}`, status: 400, truncated: false });
  });
});
