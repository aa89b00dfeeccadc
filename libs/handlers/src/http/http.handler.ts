import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type TaskHandlerContext, type TaskHandlerImpl, UnrecoverableError } from '../task-handler.js';
import { failureOf, type HttpResult, resultOf } from './http-outcome.js';
import { parseHttpPayload } from './http-payload.js';
import { secretScrubber } from './secret-scrubber.js';
import { RequestTimeoutError, type SignedResponse, sendSigned } from './signed-request.js';
import { BlockedDestinationError } from './ssrf-guard.js';

/**
 * The `http` handler: calls `{ url, method = 'POST', headers?, body?, timeoutMs? }`, signed with
 * the task's secret by the context's signer (`X-Punctual-Signature`), with `Idempotency-Key` = the execution id so the
 * receiver can recognise a retried attempt. 2xx succeeds with `{ status, headers, body, truncated }`.
 * 408, 429, 5xx, network errors and timeouts are retried; other 4xx, 3xx (redirects are not
 * followed), a bad payload and a destination refused by the SSRF guard go straight to `dead`.
 * Offered by a worker with WORKER_BUILTIN_HANDLERS (see BuiltinHandlers).
 */
@Injectable()
export class HttpHandler implements TaskHandlerImpl {
  constructor(@Inject(CONFIG) private readonly config: Config) {}

  async run({ execution, task, sign, payload, signal, log }: TaskHandlerContext): Promise<HttpResult> {
    const call = parseHttpPayload(payload);
    const url = new URL(call.url);
    const scrub = secretScrubber(payload, task.secretFields, url, sign.redact);
    // Errors and logs name the method and host only: paths and queries may carry tokens.
    const target = scrub(`${call.method} ${url.host}`);
    let response: SignedResponse;
    try {
      response = await sendSigned({
        url: call.url,
        method: call.method,
        headers: call.headers,
        body: call.body,
        sign,
        idempotencyKey: execution.id,
        executionId: execution.id,
        // The attempt's signal already ends at the task's timeout; the payload may only shorten it.
        timeoutMs: Math.min(call.timeoutMs ?? task.timeoutMs, task.timeoutMs),
        signal,
        allowHosts: this.config.httpAllowHosts,
      });
    } catch (error) {
      throw sendFailure(error, signal, target, scrub);
    }
    log.info('http call answered', { target, status: response.status, truncated: response.truncated });
    if (response.status >= 200 && response.status < 300) return resultOf(response);
    throw failureOf(response, url, target, scrub);
  }
}

/** Maps a failure to send to retryable or not, with a message fit to be stored and shown. */
function sendFailure(error: unknown, signal: AbortSignal, target: string, scrub: (text: string) => string): unknown {
  // Cancelled, lease lost, shutting down: the runner decides from the signal's own reason.
  if (signal.aborted && error === signal.reason) return error;
  // Nothing was sent, and retrying cannot help: only the URL or HTTP_ALLOW_HOSTS can change.
  if (error instanceof BlockedDestinationError) return new UnrecoverableError(scrub(error.message));
  if (error instanceof RequestTimeoutError) return new RequestTimeoutError(scrub(`${target} ${error.message}`));
  return new Error(scrub(`${target} failed: ${error instanceof Error ? error.message : String(error)}`));
}
