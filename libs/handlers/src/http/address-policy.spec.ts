import { describe, expect, it } from 'vitest';
import { blockedReason, canonicalIp } from './address-policy.js';

describe('canonicalIp', () => {
  it.each([
    ['2130706433', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7F.1', '127.0.0.1'],
    ['0', '0.0.0.0'],
    ['[::1]', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['::ffff:127.0.0.1', '::ffff:7f00:1'],
    ['0:0:0:0:0:FFFF:7F00:0001', '::ffff:7f00:1'],
  ])('%s is %s', (text, canonical) => {
    expect(canonicalIp(text)).toBe(canonical);
  });

  it.each([
    'localhost',
    'example.com',
    'fe80::1%eth0',
    '127.0.0.1:80',
    'user@127.0.0.1',
    '1.2.3.4/8',
    '',
    '999.1.1.1',
    '1.2.3.4.5',
  ])('%j is not an IP address', (text) => {
    expect(canonicalIp(text)).toBeNull();
    expect(blockedReason(text)).toBe('not an IP address');
  });
});

describe('blockedReason', () => {
  it.each([
    // IPv4 ranges, both edges where an off-by-one in a prefix would show
    ['127.0.0.1', 'a loopback address'],
    ['127.255.255.254', 'a loopback address'],
    ['0.0.0.0', 'an unspecified address'],
    ['10.0.0.1', 'a private address'],
    ['10.255.255.255', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['169.254.169.254', 'a link-local address'],
    ['100.64.0.1', 'a shared (CGNAT) address'],
    ['100.127.255.255', 'a shared (CGNAT) address'],
    ['224.0.0.1', 'a multicast address'],
    ['239.255.255.250', 'a multicast address'],
    ['255.255.255.255', 'a reserved address'],
    ['192.0.2.1', 'a documentation address'],
    ['198.19.0.1', 'a benchmarking address'],
    // IPv4 written the ways inet_aton and WHATWG URL accept
    ['2130706433', 'a loopback address'],
    ['0x7f000001', 'a loopback address'],
    ['0177.0.0.1', 'a loopback address'],
    ['127.1', 'a loopback address'],
    ['10.1', 'a private address'],
    ['3232235777', 'a private address'],
    ['0xa9fea9fe', 'a link-local address'],
    ['0', 'an unspecified address'],
    // IPv6
    ['::1', 'a loopback address'],
    ['[::1]', 'a loopback address'],
    ['0:0:0:0:0:0:0:1', 'a loopback address'],
    ['::', 'an unspecified address'],
    ['fe80::1', 'a link-local address'],
    ['febf:ffff::1', 'a link-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fd12:3456::1', 'a unique-local address'],
    ['ff02::1', 'a multicast address'],
    ['fec0::1', 'a site-local address'],
    ['2001:db8::1', 'a documentation address'],
    ['2001:0:4136:e378::1', 'a Teredo address'],
    ['100::1', 'a discard-only address'],
    ['64:ff9b:1::a00:1', 'a local-use NAT64 address'],
    // IPv6 that embeds an IPv4 address: judged by the IPv4 address it leads to
    ['::ffff:127.0.0.1', 'a loopback address (IPv4-mapped 127.0.0.1)'],
    ['::ffff:7f00:1', 'a loopback address (IPv4-mapped 127.0.0.1)'],
    ['0:0:0:0:0:ffff:7f00:1', 'a loopback address (IPv4-mapped 127.0.0.1)'],
    ['::ffff:10.0.0.1', 'a private address (IPv4-mapped 10.0.0.1)'],
    ['::ffff:a9fe:a9fe', 'a link-local address (IPv4-mapped 169.254.169.254)'],
    ['::ffff:0.0.0.0', 'an unspecified address (IPv4-mapped 0.0.0.0)'],
    ['::ffff:0:127.0.0.1', 'a loopback address (IPv4-translated 127.0.0.1)'],
    ['64:ff9b::127.0.0.1', 'a loopback address (NAT64 127.0.0.1)'],
    ['64:ff9b::c0a8:101', 'a private address (NAT64 192.168.1.1)'],
    ['2002:7f00:1::', 'a loopback address (6to4 127.0.0.1)'],
    ['2002:a9fe:a9fe::1', 'a link-local address (6to4 169.254.169.254)'],
    ['::127.0.0.1', 'a loopback address (IPv4-compatible 127.0.0.1)'],
    ['::8.8.8.8', 'a deprecated address (IPv4-compatible 8.8.8.8)'],
  ])('%s is refused as %s', (address, why) => {
    expect(blockedReason(address)).toBe(why);
  });

  it.each([
    '8.8.8.8',
    '93.184.216.34',
    '11.0.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '192.167.255.255',
    '223.255.255.255',
    '134744072', // 8.8.8.8 in decimal
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(blockedReason(address)).toBeNull();
  });
});
