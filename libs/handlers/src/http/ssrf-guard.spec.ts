import { describe, expect, it } from 'vitest';
import { BlockedDestinationError, type Lookup, resolveDestination } from './ssrf-guard.js';

/** A resolver that knows a few names, and fails the test if it is asked about an IP literal. */
function fakeDns(records: Record<string, string[]>): Lookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = async (host: string) => {
    asked.push(host);
    const answers = records[host];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookup, { asked });
}

const dns = fakeDns({
  'public.example': ['93.184.216.34', '2606:2800:220:1::1'],
  'loop.example': ['127.0.0.1'],
  'localhost.': ['127.0.0.1', '::1'],
  'mixed.example': ['93.184.216.34', '10.1.2.3'],
  'mapped.example': ['::ffff:169.254.169.254'],
});

const refusal = (url: string, allow: string[] = []) =>
  resolveDestination(new URL(url), allow, { lookup: dns }).then(
    () => null,
    (error: unknown) => error,
  );

describe('resolveDestination', () => {
  it.each([
    ['http://2130706433/', /destination 127\.0\.0\.1 is a loopback address; add the host to HTTP_ALLOW_HOSTS/],
    ['http://0x7f000001:8080/', /127\.0\.0\.1 is a loopback/],
    ['http://0177.0.0.1/', /127\.0\.0\.1 is a loopback/],
    ['http://127.1/', /127\.0\.0\.1 is a loopback/],
    ['https://[::1]:8443/', /::1 is a loopback/],
    ['http://[::ffff:127.0.0.1]/', /::ffff:7f00:1 is a loopback address \(IPv4-mapped 127\.0\.0\.1\)/],
    ['http://169.254.169.254/latest/meta-data/', /is a link-local address/],
    ['http://loop.example/', /destination loop\.example is a loopback address \(resolves to 127\.0\.0\.1\)/],
    ['http://localhost./', /destination localhost\. is a loopback address/],
    ['http://mixed.example/', /mixed\.example is a private address \(resolves to 10\.1\.2\.3\)/],
    ['http://mapped.example/', /link-local address \(IPv4-mapped 169\.254\.169\.254\)/],
    ['ftp://public.example/', /uses the ftp: scheme; only http: and https: are allowed/],
    ['file:///etc/passwd', /uses the file: scheme/],
  ])('refuses %s', async (url, message) => {
    const error = await refusal(url);
    expect(error).toBeInstanceOf(BlockedDestinationError);
    expect((error as Error).message).toMatch(message);
  });

  it('never asks DNS about an IP literal: the literal is what gets checked and connected to', async () => {
    dns.asked.length = 0;
    await refusal('http://10.0.0.1/');
    await refusal('http://[fd00::1]/');
    expect(dns.asked).toEqual([]);
  });

  it('returns every address of a public host, for the caller to connect to', async () => {
    expect(await resolveDestination(new URL('https://public.example/x'), [], { lookup: dns })).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
  });

  it('lets a host allowed by name through, whatever it resolves to, and matches names loosely', async () => {
    expect(await resolveDestination(new URL('http://127.0.0.1:9/'), ['127.0.0.1'], { lookup: dns })).toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
    expect(await resolveDestination(new URL('http://[::1]/'), ['[::1]'], { lookup: dns })).toEqual([
      { address: '::1', family: 6 },
    ]);
    expect(await resolveDestination(new URL('http://LOCALHOST./'), ['localhost'], { lookup: dns })).toHaveLength(2);
    // Allowing a name does not allow what it resolves to under another name.
    expect(await refusal('http://loop.example/', ['127.0.0.1'])).toBeInstanceOf(BlockedDestinationError);
  });

  it('a name that does not resolve is a plain (retryable) error, not a refusal', async () => {
    const error = await refusal('http://nowhere.example/');
    expect(error).not.toBeInstanceOf(BlockedDestinationError);
    expect((error as Error).message).toBe('cannot resolve nowhere.example (ENOTFOUND)');
  });

  it('stops waiting for DNS when the signal aborts', async () => {
    const stuck: Lookup = () => new Promise(() => undefined);
    const controller = new AbortController();
    const pending = resolveDestination(new URL('http://slow.example/'), [], {
      lookup: stuck,
      signal: controller.signal,
    });
    controller.abort(new Error('cancelled'));
    await expect(pending).rejects.toThrow('cancelled');
  });
});
