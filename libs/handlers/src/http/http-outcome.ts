import { RESULT_MAX_BYTES } from '@punctual/contract';
import { UnrecoverableError } from '../task-handler.js';
import type { SignedResponse } from './signed-request.js';

/** What a successful `http` execution records as its result. */
export interface HttpResult {
  status: number;
  headers: { 'content-type': string | null };
  /** The response body as text, shortened so the whole result fits the result limit. */
  body: string;
  /** True when the body was cut: by the read cap or to fit the result limit. */
  truncated: boolean;
}

// The worker keeps a result only if its JSON is at most RESULT_MAX_BYTES and otherwise stores just
// `{ truncated: true }`; a 64 KiB body plus the status would cross that line, so it is cut here.
const ERROR_BODY_CHARS = 200;

/** The execution result for a 2xx answer, at most 64 KiB of JSON whatever the body holds. */
export function resultOf(response: SignedResponse): HttpResult {
  // Postgres `jsonb` refuses `\u0000`: a binary body must not make recording the success fail.
  const body = response.body.replaceAll('\u0000', '\uFFFD');
  const result: HttpResult = {
    status: response.status,
    headers: { 'content-type': response.contentType },
    body,
    truncated: response.truncated,
  };
  if (jsonBytes(result) <= RESULT_MAX_BYTES) return result;
  // Longest prefix that fits; JSON escaping makes the size non-linear in the length, hence the search.
  let [low, high] = [0, body.length];
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes({ ...result, body: body.slice(0, mid), truncated: true }) <= RESULT_MAX_BYTES) low = mid;
    else high = mid - 1;
  }
  // Never end on half a surrogate pair: `jsonb` refuses a lone surrogate too.
  if (low > 0 && /[\uD800-\uDBFF]/.test(body[low - 1]!)) low -= 1;
  return { ...result, body: body.slice(0, low), truncated: true };
}

/**
 * The error a non-2xx answer fails the attempt with. 408, 429 and 5xx are worth retrying (plain
 * `Error`). Other 4xx will not change by asking again: {@link UnrecoverableError}, straight to
 * `dead`. So is a 3xx: redirects are never followed (the new location could be anywhere, the guard
 * only vouched for this one) and asking again would get the same redirect; the fix is to call the
 * final URL, which the message names.
 */
export function failureOf(response: SignedResponse, url: URL, target: string, scrub: (text: string) => string): Error {
  const { status } = response;
  const snippet = response.body.trim().slice(0, ERROR_BODY_CHARS);
  const said = snippet ? `: ${snippet}${response.body.length > ERROR_BODY_CHARS ? '…' : ''}` : '';
  if (status === 408 || status === 429 || status >= 500) return new Error(scrub(`${target} answered ${status}${said}`));
  if (status >= 300 && status < 400) {
    const to = redirectOrigin(response.location, url);
    return new UnrecoverableError(
      scrub(
        `${target} answered ${status}, a redirect${to ? ` to ${to}` : ''}; redirects are not followed, call the final URL`,
      ),
    );
  }
  return new UnrecoverableError(scrub(`${target} answered ${status}${said}`));
}

/** Only the origin: the rest of a `Location` may carry tokens. */
function redirectOrigin(location: string | null, base: URL): string | null {
  if (!location || !URL.canParse(location, base.href)) return null;
  return new URL(location, base).origin;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
