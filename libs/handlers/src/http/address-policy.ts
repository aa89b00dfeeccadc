import { isIPv4, isIPv6 } from 'node:net';

// Ranges no scheduled request may reach unless its host is allowed by name: they lead into the
// machine, the cluster, the cloud's metadata service (169.254.169.254) or nowhere at all, rather
// than to the internet. Sources: the IANA IPv4/IPv6 special-purpose address registries.
const V4: readonly (readonly [base: string, prefix: number, why: string])[] = [
  ['0.0.0.0', 8, 'an unspecified address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a protocol-assignment address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

const V6: readonly (readonly [base: string, prefix: number, why: string])[] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  // Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the site, so refuse it all.
  ['64:ff9b:1::', 48, 'a local-use NAT64 address'],
  ['100::', 64, 'a discard-only address'],
  // Teredo hides the client's IPv4 address (XOR-ed); it is obsolete, so refuse it rather than decode.
  ['2001::', 32, 'a Teredo address'],
  ['2001:db8::', 32, 'a documentation address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

// IPv6 forms that carry an IPv4 address the packet ends up at: judged by that IPv4 address.
// [prefix words, prefix length, index of the first of the two words holding the IPv4 address].
const EMBEDDING: readonly (readonly [base: string, prefix: number, at: number, kind: string])[] = [
  ['::ffff:0:0', 96, 6, 'IPv4-mapped'],
  ['::ffff:0:0:0', 96, 6, 'IPv4-translated'],
  ['64:ff9b::', 96, 6, 'NAT64'],
  ['2002::', 16, 1, '6to4'],
];

/**
 * Brings any spelling of an IP address to the canonical form WHATWG `URL` gives it — the same
 * parser that reads the `http` handler's URLs — so `2130706433`, `0x7f000001`, `0177.0.0.1` and
 * `127.1` all become `127.0.0.1`, and `[::ffff:127.0.0.1]` becomes `::ffff:7f00:1`. Null when the
 * text is not an IP address (a host name, a zone id, garbage).
 */
export function canonicalIp(text: string): string | null {
  const bare = text.replace(/^\[(.*)\]$/, '$1');
  // Only characters an IP literal can hold: `URL` must not see userinfo, ports or paths here.
  if (!/^[0-9a-fx.:]+$/i.test(bare)) return null;
  let host: string;
  try {
    host = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return null; // not an IP literal: the documented answer, a host name goes to DNS instead
  }
  return isIPv4(host) || isIPv6(host) ? host : null;
}

/**
 * Why `address` must not be reached — `"a loopback address"`, `"a private address (IPv4-mapped
 * 10.0.0.1)"` — or null when it is a public address. Accepts every form {@link canonicalIp} does;
 * anything that is not an IP address is refused.
 */
export function blockedReason(address: string): string | null {
  const ip = canonicalIp(address);
  if (ip === null) return 'not an IP address';
  return isIPv4(ip) ? v4Reason(v4Number(ip)) : v6Reason(v6Words(ip));
}

function v4Reason(ip: number): string | null {
  for (const [base, prefix, why] of V4) if (ip >>> (32 - prefix) === v4Number(base) >>> (32 - prefix)) return why;
  return null;
}

function v6Reason(words: number[]): string | null {
  // `::` and `::1` first: they also fall inside the IPv4-compatible form below.
  const exact = V6.slice(0, 2).find(([base]) => sameWords(words, v6Words(base), 128));
  if (exact) return exact[2];
  for (const [base, prefix, at, kind] of EMBEDDING) {
    if (!sameWords(words, v6Words(base), prefix)) continue;
    const v4 = ((words[at]! << 16) | words[at + 1]!) >>> 0;
    const why = v4Reason(v4);
    return why && `${why} (${kind} ${v4Text(v4)})`;
  }
  // Deprecated IPv4-compatible `::a.b.c.d`: not routable today, refused whatever it embeds.
  if (sameWords(words, [0, 0, 0, 0, 0, 0, 0, 0], 96)) {
    const v4 = ((words[6]! << 16) | words[7]!) >>> 0;
    return `${v4Reason(v4) ?? 'a deprecated address'} (IPv4-compatible ${v4Text(v4)})`;
  }
  return V6.slice(2).find(([base, prefix]) => sameWords(words, v6Words(base), prefix))?.[2] ?? null;
}

function v4Number(ip: string): number {
  return ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

function v4Text(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** The eight 16-bit words of a canonical (hex-only, `::`-compressed) IPv6 address. */
function v6Words(ip: string): number[] {
  const [head = '', tail] = ip.split('::');
  const words = (part: string) => (part ? part.split(':').map((w) => parseInt(w, 16)) : []);
  if (tail === undefined) return words(head);
  const [h, t] = [words(head), words(tail)];
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

function sameWords(a: number[], b: number[], prefix: number): boolean {
  for (let i = 0; i < 8 && prefix > i * 16; i++) {
    const bits = Math.min(16, prefix - i * 16);
    const mask = (0xffff << (16 - bits)) & 0xffff;
    if ((a[i]! & mask) !== (b[i]! & mask)) return false;
  }
  return true;
}
