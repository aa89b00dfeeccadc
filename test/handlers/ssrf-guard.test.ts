import net from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { loadConfig } from '../../libs/config/src/index.js';
import {
  BlockedDestinationError,
  hmacSigner,
  HttpHandler,
  type Lookup,
  sendSigned,
  UnrecoverableError,
} from '../../libs/handlers/src/index.js';
import { fakeContext, rejectionOf, startLocalServer } from './local-server.js';

let server: Awaited<ReturnType<typeof startLocalServer>>;
beforeAll(async () => {
  server = await startLocalServer({ '/hook': (res) => res.end('reached') });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

/** A resolver for made-up names; a test never depends on real DNS. */
function fakeDns(records: Record<string, string[][]>): Lookup & { calls: number } {
  const state = Object.assign(
    async (host: string) => {
      // Each call takes the next answer: a rebinding DNS server answers differently every time.
      const answers = records[host]?.[Math.min(state.calls++, records[host]!.length - 1)] ?? [];
      return answers.map((address) => ({ address, family: net.isIP(address) }));
    },
    { calls: 0 },
  );
  return state;
}

const signed = (url: string, lookup: Lookup, allowHosts: string[] = []) =>
  sendSigned({
    url,
    body: { ping: 1 },
    sign: hmacSigner('s3cret'),
    idempotencyKey: 'k',
    timeoutMs: 5_000,
    allowHosts,
    lookup,
  });

describe('SSRF guard with no allow list', () => {
  const guarded = new HttpHandler(loadConfig({}));
  let connect: MockInstance;
  // Every socket in Node goes through Socket#connect: trapping it proves nothing was even attempted,
  // and keeps a broken guard from sending a single packet to 10.0.0.1 or the metadata service.
  beforeEach(() => {
    connect = vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(() => {
      throw new Error('test trap: a socket was opened');
    });
  });
  afterEach(() => connect.mockRestore());

  it('the trap does catch a connection (so its silence below means something)', async () => {
    const allowed = new HttpHandler(loadConfig({ HTTP_ALLOW_HOSTS: '127.0.0.1' }));
    const error = await rejectionOf(allowed.run(fakeContext({ url: server.url('/hook') })));
    expect(error.message).toContain('test trap: a socket was opened');
    expect(connect).toHaveBeenCalled();
  });

  const targets = (port: number): [string, string][] => [
    [`http://127.0.0.1:${port}/hook`, '127.0.0.1 is a loopback address'],
    [`http://localhost:${port}/hook`, 'localhost is a loopback address (resolves to 127.0.0.1)'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
    ['http://10.0.0.1/', '10.0.0.1 is a private address'],
    ['http://192.168.1.1/', '192.168.1.1 is a private address'],
    ['http://100.64.0.1/', '100.64.0.1 is a shared (CGNAT) address'],
    ['http://0.0.0.0/', '0.0.0.0 is an unspecified address'],
    [`http://[::1]:${port}/hook`, '::1 is a loopback address'],
    [`http://[::ffff:127.0.0.1]:${port}/hook`, '::ffff:7f00:1 is a loopback address (IPv4-mapped 127.0.0.1)'],
    ['http://[fd00::1]/', 'fd00::1 is a unique-local address'],
    [`http://2130706433:${port}/hook`, '127.0.0.1 is a loopback address'],
    [`http://0x7f000001:${port}/hook`, '127.0.0.1 is a loopback address'],
    [`http://0177.0.0.1:${port}/hook`, '127.0.0.1 is a loopback address'],
    [`http://127.1:${port}/hook`, '127.0.0.1 is a loopback address'],
    [`https://127.0.0.1:${port}/hook`, '127.0.0.1 is a loopback address'],
  ];

  it('refuses every non-public target with a clear, permanent error and never opens a socket', async () => {
    for (const [url, why] of targets(server.port)) {
      const error = await rejectionOf(guarded.run(fakeContext({ url })));
      expect(error, url).toBeInstanceOf(UnrecoverableError);
      expect(error.message, url).toBe(`destination ${why}; add the host to HTTP_ALLOW_HOSTS to allow it`);
    }
    expect(connect).not.toHaveBeenCalled();
    expect(server.connections).toBe(0);
  });

  it('refuses a name that resolves to loopback, or to any private address among public ones', async () => {
    const dns = fakeDns({ 'localhost.': [['127.0.0.1']], 'sneaky.example': [['93.184.216.34', '10.9.8.7']] });
    const loop = await rejectionOf(signed(`http://localhost.:${server.port}/hook`, dns));
    expect(loop).toBeInstanceOf(BlockedDestinationError);
    expect(loop.message).toBe(
      'destination localhost. is a loopback address (resolves to 127.0.0.1); add the host to HTTP_ALLOW_HOSTS to allow it',
    );
    const mixed = await rejectionOf(signed('http://sneaky.example/', dns));
    expect(mixed.message).toContain('sneaky.example is a private address (resolves to 10.9.8.7)');
    expect(connect).not.toHaveBeenCalled();
    expect(server.connections).toBe(0);
  });

  it('refuses schemes other than http and https before anything else', async () => {
    const error = await rejectionOf(signed('ftp://127.0.0.1/x', fakeDns({})));
    expect(error).toBeInstanceOf(BlockedDestinationError);
    expect(connect).not.toHaveBeenCalled();
  });
});

describe('the connection goes to exactly the address that was resolved and checked', () => {
  it('resolves once and connects to that answer, even if DNS would answer differently a moment later', async () => {
    // First answer: the local server. Any later answer: somewhere else. The name exists nowhere
    // but in this fake, so reaching the server proves the socket used the checked answer.
    const dns = fakeDns({ 'pinned.example': [['127.0.0.1'], ['10.0.0.1']] });
    const response = await signed(`http://pinned.example:${server.port}/hook`, dns, ['pinned.example']);
    expect(response.status).toBe(200);
    expect(response.body).toBe('reached');
    expect(dns.calls).toBe(1);
    expect(server.requests).toHaveLength(1);
    // The Host header keeps the name the URL gave, not the address.
    expect(server.requests[0]!.headers.host).toBe(`pinned.example:${server.port}`);
  });

  it('opens a fresh connection for every request: a pooled socket would skip the check', async () => {
    const dns = fakeDns({ 'pooled.example': [['127.0.0.1']] });
    await signed(`http://pooled.example:${server.port}/hook`, dns, ['pooled.example']);
    await signed(`http://pooled.example:${server.port}/hook`, dns, ['pooled.example']);
    expect(dns.calls).toBe(2);
    expect(server.connections).toBe(2);
  });

  it('over https, sends the host name for SNI while connecting to the checked address', async () => {
    let hello: Buffer | null = null;
    // A bare TCP listener: the TLS ClientHello (and its SNI) arrives before any certificate.
    const tls = net.createServer((socket) => socket.once('data', (data: Buffer) => ((hello = data), socket.destroy())));
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    try {
      const port = (tls.address() as net.AddressInfo).port;
      const dns = fakeDns({ 'tls.example': [['127.0.0.1']] });
      const error = await rejectionOf(signed(`https://tls.example:${port}/hook`, dns, ['tls.example']));
      expect(error).not.toBeInstanceOf(BlockedDestinationError);
      expect(hello).not.toBeNull();
      expect(hello!.includes('tls.example')).toBe(true);
    } finally {
      await new Promise((resolve) => tls.close(resolve));
    }
  });

  it('a name that resolves nowhere is a retryable error, and nothing is sent', async () => {
    const error = await rejectionOf(signed(`http://missing.example:${server.port}/hook`, fakeDns({})));
    expect(error).not.toBeInstanceOf(BlockedDestinationError);
    expect(error.message).toBe('cannot resolve missing.example (ENODATA)');
    expect(server.connections).toBe(0);
  });
});
