import { redactPayload } from '@punctual/observability';
import { TaskHandler, type TaskHandlerContext, type TaskHandlerImpl, UnrecoverableError } from './task-handler.js';

/** Returns at once: for tests, demos and benchmarks. */
@TaskHandler('noop')
export class NoopHandler implements TaskHandlerImpl {
  async run(): Promise<null> {
    return null;
  }
}

/** Logs the payload and returns it. */
@TaskHandler('log')
export class LogHandler implements TaskHandlerImpl {
  async run({ payload, task, log }: TaskHandlerContext): Promise<unknown> {
    log.info('log handler', { payload: redactPayload(payload, task.secretFields) });
    return { logged: true };
  }
}

/** Waits `payload.ms` (default 1000), or until the attempt is aborted: a stand-in for slow work. */
@TaskHandler('sleep')
export class SleepHandler implements TaskHandlerImpl {
  async run({ payload, signal, progress }: TaskHandlerContext): Promise<{ slept: number }> {
    const ms = Math.max(0, Math.min(Number((payload as { ms?: unknown })?.ms ?? 1000) || 0, 86_400_000));
    const started = Date.now();
    await progress(0);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
    });
    await progress(100);
    return { slept: Date.now() - started };
  }
}

/**
 * Fails on purpose — to see retries and the dead letter at work. `payload.unrecoverable` skips the
 * retries; `payload.succeedOnAttempt` lets attempt N succeed.
 */
@TaskHandler('fail')
export class FailHandler implements TaskHandlerImpl {
  async run({ payload, attempt }: TaskHandlerContext): Promise<{ attempt: number }> {
    const p = (payload ?? {}) as { message?: string; unrecoverable?: boolean; succeedOnAttempt?: number };
    if (p.succeedOnAttempt !== undefined && attempt >= p.succeedOnAttempt) return { attempt };
    const message = p.message ?? `failed on purpose (attempt ${attempt})`;
    throw p.unrecoverable ? new UnrecoverableError(message) : new Error(message);
  }
}
