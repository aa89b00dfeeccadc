import { describe, expect, it } from 'vitest';
import { blockedReason, BlockedDestinationError, resolveDestination } from './ssrf.js';

describe('blockedReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'], ['169.254.169.254', 'link-local'], ['100.64.0.1', 'CGNAT'], ['0.0.0.0', 'unspecified'], ['224.0.0.1', 'multicast'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fc00::1', 'unique-local'], ['fd12:3456::1', 'unique-local'], ['fe80::1', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:a00:1', 'private'], ['::ffff:169.254.169.254', 'link-local'], ['64:ff9b::7f00:1', 'NAT64'],
  ])('%s is refused (%s)', (address, why) => {
    expect(blockedReason(address)).toContain(why);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(blockedReason(address)).toBeNull();
  });
});

describe('resolveDestination', () => {
  const noDns = async () => [] as { address: string; family: number }[];
  it.each(['http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://127.1/', 'http://[::ffff:127.0.0.1]/', 'http://[::1]:8080/'])(
    'refuses the literal form %s (normalized by URL)',
    async (raw) => {
      await expect(resolveDestination(new URL(raw), [], noDns)).rejects.toBeInstanceOf(BlockedDestinationError);
    },
  );

  it('refuses a name that resolves to loopback, and one with any private answer', async () => {
    await expect(resolveDestination(new URL('http://evil.example/'), [], async () => [{ address: '127.0.0.1', family: 4 }])).rejects.toThrow(/loopback/);
    const mixed = async () => [{ address: '93.184.216.34', family: 4 }, { address: '10.1.2.3', family: 4 }];
    await expect(resolveDestination(new URL('http://mixed.example/'), [], mixed)).rejects.toThrow(/private/);
  });

  it('lets an allowed host through, and a public one', async () => {
    expect(await resolveDestination(new URL('http://127.0.0.1:9/'), ['127.0.0.1'], noDns)).toEqual({ address: '127.0.0.1', family: 4 });
    expect((await resolveDestination(new URL('https://example.com/'), [], async () => [{ address: '93.184.216.34', family: 4 }])).address).toBe('93.184.216.34');
  });

  it('refuses other schemes', async () => {
    await expect(resolveDestination(new URL('file:///etc/passwd'), [], noDns)).rejects.toThrow(/only http and https/);
  });
});
