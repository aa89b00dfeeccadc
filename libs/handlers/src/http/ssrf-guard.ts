import { lookup as systemLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { blockedReason } from './address-policy.js';

/** An address a host name resolved to, as `dns.lookup(…, { all: true })` gives it. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** How host names are resolved; tests inject their own so that no real DNS is needed. */
export type Lookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * A destination the `http` handler or the outbox notifier refuses to reach. Retrying cannot help
 * (only a change to the URL or to `HTTP_ALLOW_HOSTS` can), so callers treat it as permanent.
 */
export class BlockedDestinationError extends Error {
  override readonly name = 'BlockedDestinationError';

  /** @param host the URL's host name; @param reason why, e.g. `is a loopback address` */
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`destination ${host} ${reason}`);
  }
}

/** Options of {@link resolveDestination}. */
export interface ResolveOptions {
  /** Replaces the system resolver (tests). */
  lookup?: Lookup;
  /** Gives up waiting for DNS when this aborts (rejecting with its reason). */
  signal?: AbortSignal;
}

const defaultLookup: Lookup = (hostname) => systemLookup(hostname, { all: true, verbatim: true });

/**
 * Resolves `url`'s host **now** and checks every address it resolves to; returns those addresses
 * so the caller connects to exactly them and DNS cannot answer differently in between (DNS
 * rebinding). Refuses other schemes than `http:`/`https:`, and any host with a non-public address
 * unless the host is listed in `allowHosts` by name. Throws {@link BlockedDestinationError} on a
 * refusal and a plain `Error` when the name does not resolve (DNS may recover: worth a retry).
 */
export async function resolveDestination(
  url: URL,
  allowHosts: readonly string[],
  options: ResolveOptions = {},
): Promise<ResolvedAddress[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BlockedDestinationError(
      url.hostname || url.protocol,
      `uses the ${url.protocol} scheme; only http: and https: are allowed`,
    );
  }
  // WHATWG URL already lower-cased the host and turned decimal, hex, octal and short IPv4 forms
  // into dotted quads, so the literal check below sees what the socket would connect to.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host);
  const addresses = literal ? [{ address: host, family: literal }] : await resolveName(host, options);
  if (isAllowed(host, allowHosts)) return addresses;
  for (const { address } of addresses) {
    const why = blockedReason(address);
    const resolved = address === host ? '' : ` (resolves to ${address})`;
    if (why)
      throw new BlockedDestinationError(host, `is ${why}${resolved}; add the host to HTTP_ALLOW_HOSTS to allow it`);
  }
  return addresses;
}

/** Allowed by name only: `localhost.` matches `localhost`, `[::1]` matches `::1`. */
function isAllowed(host: string, allowHosts: readonly string[]): boolean {
  const bare = (h: string) =>
    h
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/\.$/, '');
  const name = bare(host);
  return allowHosts.some((allowed) => bare(allowed) === name);
}

async function resolveName(
  host: string,
  { lookup = defaultLookup, signal }: ResolveOptions,
): Promise<ResolvedAddress[]> {
  signal?.throwIfAborted();
  // `dns.lookup` cannot be cancelled; racing it keeps a timeout or a cancel from waiting on it.
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => (onAbort = () => reject(signal!.reason)));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const answers = await Promise.race([lookup(host), aborted]);
    if (answers.length === 0) throw Object.assign(new Error('no addresses'), { code: 'ENODATA' });
    return answers.map(({ address }) => ({ address, family: isIP(address) }));
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`cannot resolve ${host} (${code})`);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
