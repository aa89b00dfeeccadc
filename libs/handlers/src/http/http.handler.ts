import { Inject } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { TaskHandler, type TaskHandlerContext, type TaskHandlerImpl, UnrecoverableError } from '../task-handler.js';
import { sendSigned } from './signed-request.js';
import { BlockedDestinationError } from './ssrf.js';

interface HttpPayload {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

/**
 * Calls a URL: `{ url, method = POST, headers, body, timeoutMs }`, signed with the task's secret,
 * `Idempotency-Key` = the execution id (so a retried attempt can be recognised downstream).
 * 2xx succeeds; 408, 429, 5xx and network errors are retried; other 4xx, 3xx (redirects are never
 * followed: the target could be anywhere) and refused destinations go straight to the dead letter.
 */
@TaskHandler('http')
export class HttpHandler implements TaskHandlerImpl {
  constructor(@Inject(CONFIG) private readonly config: Config) {}

  async run({ execution, task, payload, signal }: TaskHandlerContext) {
    const p = validPayload(payload);
    try {
      const res = await sendSigned({
        url: p.url,
        method: p.method?.toUpperCase() ?? 'POST',
        headers: { ...p.headers, 'x-punctual-execution': execution.id },
        body: p.body,
        secret: task.secret,
        idempotencyKey: execution.id,
        timeoutMs: Math.min(p.timeoutMs ?? task.timeoutMs, task.timeoutMs),
        signal,
        allowHosts: this.config.httpAllowHosts,
      });
      const result = { status: res.status, contentType: res.contentType, body: res.body, truncated: res.truncated };
      if (res.status >= 200 && res.status < 300) return result;
      const message = `${p.method ?? 'POST'} ${new URL(p.url).host} answered ${res.status}`;
      if (res.status === 408 || res.status === 429 || res.status >= 500) throw new Error(message);
      throw new UnrecoverableError(res.status >= 300 && res.status < 400 ? `${message} (redirects are not followed)` : message);
    } catch (error) {
      if (error instanceof BlockedDestinationError) throw new UnrecoverableError(error.message);
      throw error;
    }
  }
}

function validPayload(payload: unknown): HttpPayload {
  const p = payload as Partial<HttpPayload> | null;
  if (!p || typeof p !== 'object' || typeof p.url !== 'string') throw new UnrecoverableError('http payload needs a url');
  try {
    new URL(p.url);
  } catch {
    throw new UnrecoverableError('http payload url is not a valid URL');
  }
  if (p.method !== undefined && (typeof p.method !== 'string' || !METHODS.has(p.method.toUpperCase()))) throw new UnrecoverableError(`http payload method must be one of ${[...METHODS].join(', ')}`);
  if (p.headers !== undefined && (typeof p.headers !== 'object' || Object.values(p.headers).some((v) => typeof v !== 'string'))) throw new UnrecoverableError('http payload headers must map names to strings');
  if (p.timeoutMs !== undefined && !(Number.isInteger(p.timeoutMs) && p.timeoutMs > 0)) throw new UnrecoverableError('http payload timeoutMs must be a positive integer');
  return p as HttpPayload;
}
