import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { tracing } from '@punctual/tracing';
import { type Lookup, type ResolvedAddress, resolveDestination } from './ssrf-guard.js';

/** How much of a response body is read before the rest is dropped (and the connection closed). */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * Headers {@link sendSigned} sets itself; a caller's value for any of them is ignored. `host` and the
 * framing headers would let a payload disagree with where and what is actually sent.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'user-agent',
  'idempotency-key',
  'x-punctual-signature',
  'x-punctual-execution',
]);

/** One signed request: what the `http` handler and the outbox notifier send. */
export interface SignedRequest {
  url: string;
  /** Default `POST`. */
  method?: string;
  headers?: Readonly<Record<string, string>>;
  /** A string is sent as it is; anything else (but `undefined`: no body) as JSON. */
  body?: unknown;
  /** The value of `X-Punctual-Signature` for the exact bytes sent (see `hmacSigner`). */
  sign: (bytes: Buffer) => string;
  idempotencyKey: string;
  /** Sent as `X-Punctual-Execution` when given. */
  executionId?: string;
  /** Bounds the whole exchange: DNS, connect, request and reading the response. */
  timeoutMs: number;
  /** Aborts the exchange (the request rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Hosts exempt from the SSRF guard (`HTTP_ALLOW_HOSTS`). */
  allowHosts: readonly string[];
  maxResponseBytes?: number;
  /** Replaces the system resolver (tests). */
  lookup?: Lookup;
}

/** The answer, whatever its status: deciding what a status means is the caller's business. */
export interface SignedResponse {
  status: number;
  contentType: string | null;
  /** The `Location` header: redirects are reported, never followed. */
  location: string | null;
  /** The body as UTF-8, at most `maxResponseBytes` of it. */
  body: string;
  truncated: boolean;
}

/** The exchange took longer than its `timeoutMs`. Worth a retry. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
}

/** The bytes a body is sent as, and the content type that goes with them. */
export function encodeBody(body: unknown): { bytes: Buffer; contentType: string | null } {
  if (body === undefined) return { bytes: Buffer.alloc(0), contentType: null };
  if (typeof body === 'string') return { bytes: Buffer.from(body, 'utf8'), contentType: null };
  return { bytes: Buffer.from(JSON.stringify(body), 'utf8'), contentType: 'application/json' };
}

/** `sha256=<hex HMAC-SHA256 of the exact bytes sent>`, the value of `X-Punctual-Signature`. */
export function signBody(bytes: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(bytes).digest('hex')}`;
}

/**
 * Sends one signed request through the SSRF guard: the host is resolved and checked at send time
 * and the socket goes to exactly the checked addresses (TLS still verifies the host name).
 * Redirects are not followed; the body is read up to a cap. Resolves with any status; throws
 * `BlockedDestinationError` (nothing was sent), {@link RequestTimeoutError}, the signal's reason,
 * or the network error.
 */
export async function sendSigned(request: SignedRequest): Promise<SignedResponse> {
  const url = new URL(request.url);
  const stop = new AbortController();
  const onAbort = () => stop.abort(request.signal!.reason);
  const timer = setTimeout(
    () => stop.abort(new RequestTimeoutError(`timed out after ${request.timeoutMs} ms`)),
    request.timeoutMs,
  );
  request.signal?.addEventListener('abort', onAbort, { once: true });
  if (request.signal?.aborted) onAbort();
  try {
    const addresses = await resolveDestination(url, request.allowHosts, {
      lookup: request.lookup,
      signal: stop.signal,
    });
    const { bytes, contentType } = encodeBody(request.body);
    const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {};
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
    }
    // W3C `traceparent` of the active span (the handler's), so the receiver can join the trace.
    tracing.injectHeaders(headers);
    Object.assign(headers, {
      'user-agent': 'punctual',
      'idempotency-key': request.idempotencyKey,
      'x-punctual-signature': request.sign(bytes),
      'content-length': String(bytes.length),
      ...(request.executionId ? { 'x-punctual-execution': request.executionId } : {}),
    });
    const options = {
      method: request.method ?? 'POST',
      headers,
      lookup: pinnedLookup(addresses),
      agent: false as const,
    };
    return await exchange(url, options, bytes, stop.signal, request.maxResponseBytes ?? MAX_RESPONSE_BYTES);
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A resolver that only knows the checked addresses, so the socket cannot reach anything else.
 * (An IP-literal host skips `lookup` altogether: that literal is what was checked.)
 */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    const usable = addresses.filter((a) => family === 0 || a.family === family);
    if (usable.length === 0)
      return callback(Object.assign(new Error('no checked address of that family'), { code: 'ENOTFOUND' }), '');
    if (options.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}

/** One request/response over a fresh connection; settles once, on the answer, an error or `signal`. */
function exchange(
  url: URL,
  options: http.RequestOptions,
  body: Buffer,
  signal: AbortSignal,
  max: number,
): Promise<SignedResponse> {
  return new Promise<SignedResponse>((resolve, reject) => {
    signal.throwIfAborted();
    // A fresh connection each time (`agent: false`): a pooled socket would skip the check above.
    const req = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (truncated: boolean) => {
        const { 'content-type': contentType = null, location = null } = res.headers;
        resolve({
          status: res.statusCode ?? 0,
          contentType,
          location,
          body: Buffer.concat(chunks).toString('utf8'),
          truncated,
        });
      };
      res.on('data', (chunk: Buffer) => {
        const room = max - size;
        if (chunk.length <= room) {
          chunks.push(chunk);
          size += chunk.length;
          return;
        }
        chunks.push(chunk.subarray(0, room));
        size = max;
        finish(true);
        // Enough read: closing the connection stops the download instead of draining it.
        res.destroy();
      });
      res.on('end', () => finish(false));
      res.on('error', reject);
    });
    const onAbort = () => {
      req.destroy();
      reject(signal.reason);
    };
    // `signal` belongs to this one request (sendSigned's own controller): no listener to remove.
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => reject(signal.aborted ? signal.reason : error));
    req.end(body);
  });
}
