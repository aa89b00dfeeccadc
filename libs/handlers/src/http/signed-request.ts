import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { type Lookup, resolveDestination } from './ssrf.js';

export interface SignedRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** A string is sent as it is; anything else as JSON. */
  body?: unknown;
  /** HMAC-SHA256 key for `X-Punctual-Signature`. */
  secret: string;
  idempotencyKey: string;
  timeoutMs: number;
  signal?: AbortSignal;
  allowHosts: readonly string[];
  maxResponseBytes?: number;
  /** For tests: how host names resolve. */
  lookup?: Lookup;
}

export interface SignedResponse {
  status: number;
  contentType: string | null;
  body: string;
  truncated: boolean;
}

/** The signature of a body: `sha256=<hex HMAC-SHA256 of the exact bytes sent>`. */
export function signBody(body: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Sends one signed request through the SSRF guard: the destination is resolved and checked at send
 * time and the socket goes to exactly that address. No redirects are followed; the response body
 * is read up to a cap. Throws on network errors, timeouts and aborts.
 */
export async function sendSigned(request: SignedRequest): Promise<SignedResponse> {
  const url = new URL(request.url);
  const destination = await resolveDestination(url, request.allowHosts, request.lookup);
  const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(typeof request.body === 'string' ? request.body : JSON.stringify(request.body));
  const headers: Record<string, string> = {
    'user-agent': 'punctual',
    ...(typeof request.body === 'string' || request.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...request.headers,
    'idempotency-key': request.idempotencyKey,
    'x-punctual-signature': signBody(body, request.secret),
    'content-length': String(body.length),
  };
  // Connect to the address that was checked, whatever DNS answers a moment later.
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [destination]);
    else callback(null, destination.address, destination.family);
  };
  const max = request.maxResponseBytes ?? 64 * 1024;
  const signals = [AbortSignal.timeout(request.timeoutMs), ...(request.signal ? [request.signal] : [])];
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<SignedResponse>((resolve, reject) => {
    const req = client.request(url, { method: request.method ?? 'POST', headers, lookup: pinned, signal: AbortSignal.any(signals) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      res.on('data', (chunk: Buffer) => {
        const room = max - size;
        if (chunk.length > room) {
          // Enough read: keep the cap, drop the rest, stop downloading.
          chunks.push(chunk.subarray(0, room));
          size = max;
          truncated = true;
          res.destroy();
          return finish();
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => finish());
      res.on('error', reject);
      let done = false;
      function finish() {
        if (done) return;
        done = true;
        resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? null, body: Buffer.concat(chunks).toString('utf8'), truncated });
      }
    });
    req.on('error', (error) => reject(signals[0]!.aborted ? new Error(`request timed out after ${request.timeoutMs} ms`) : error));
    req.end(body);
  });
}
