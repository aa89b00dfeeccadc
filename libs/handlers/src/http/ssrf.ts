import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** A destination the `http` handler or the notifier refuses to reach. */
export class BlockedDestinationError extends Error {
  override readonly name = 'BlockedDestinationError';
}

// Ranges no scheduled request may reach unless its host is allowed by name: they lead into the
// machine, the cluster or the cloud's metadata service rather than to the internet.
const BLOCKED_V4: [string, number, string][] = [
  ['0.0.0.0', 8, 'an unspecified address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a protocol-assignment address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];
const BLOCKED_V6: [string, number, string][] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['ff00::', 8, 'a multicast address'],
  ['64:ff9b::', 96, 'a NAT64 address'],
];

const v4 = BLOCKED_V4.map(([net, prefix, why]) => ({ list: single(net, prefix, 'ipv4'), why }));
const v6 = BLOCKED_V6.map(([net, prefix, why]) => ({ list: single(net, prefix, 'ipv6'), why }));

function single(net: string, prefix: number, type: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return list;
}

/** IPv4 embedded in an IPv4-mapped or -compatible IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`). */
function embeddedV4(address: string): string | null {
  const m = /^(?:0*:)*:(?:ffff:)?(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!m || (!m[1] && !m[2])) return null;
  if (m[1]) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why `address` (an IP literal) must not be reached, or null when it is public. */
export function blockedReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return v4.find((r) => r.list.check(address, 'ipv4'))?.why ?? null;
  if (family === 6) {
    const mapped = embeddedV4(address);
    if (mapped && mapped !== '0.0.0.0' && mapped !== '0.0.0.1') return blockedReason(mapped);
    return v6.find((r) => r.list.check(address, 'ipv6'))?.why ?? null;
  }
  return 'not an IP address';
}

export type Lookup = (hostname: string) => Promise<{ address: string; family: number }[]>;
const systemLookup: Lookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Resolves the URL's host and checks **every** address it resolves to, at send time; returns the
 * address to connect to (the caller connects to exactly that one, so DNS cannot change the answer
 * in between). A host in `allowHosts` skips the check.
 */
export async function resolveDestination(url: URL, allowHosts: readonly string[], lookup: Lookup = systemLookup): Promise<{ address: string; family: number }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new BlockedDestinationError(`only http and https URLs are allowed, not ${url.protocol}`);
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const allowed = allowHosts.includes(host) || allowHosts.includes(host.replace(/\.$/, ''));
  const family = isIP(host);
  const addresses = family ? [{ address: host, family }] : await lookup(host).catch(() => []);
  // Not a refusal: DNS may answer on the next attempt.
  if (addresses.length === 0) throw new Error(`cannot resolve ${host}`);
  if (!allowed) {
    for (const { address } of addresses) {
      const why = blockedReason(address);
      if (why) throw new BlockedDestinationError(`destination ${host}${address !== host ? ` (${address})` : ''} is ${why}; add the host to HTTP_ALLOW_HOSTS to allow it`);
    }
  }
  return addresses[0]!;
}
