import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { HandlerRegistry } from './handler-registry.js';
import { type TaskHandlerContext, type TaskHandlerImpl, UnrecoverableError } from './task-handler.js';

/**
 * Waits `payload.ms` (default 1000), or until the attempt is aborted: a stand-in for slow work.
 * `payload.ignoreAbort` makes it a handler that does not honour its signal: it sleeps on.
 */
export class SleepHandler implements TaskHandlerImpl {
  async run({ payload, signal, progress }: TaskHandlerContext): Promise<{ slept: number }> {
    const p = (payload ?? {}) as { ms?: unknown; ignoreAbort?: unknown };
    const ms = Math.max(0, Math.min(Number(p.ms ?? 1000) || 0, 86_400_000));
    const started = Date.now();
    await progress(0);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      if (p.ignoreAbort !== true)
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
export class FailHandler implements TaskHandlerImpl {
  async run({ payload, attempt }: TaskHandlerContext): Promise<{ attempt: number }> {
    const p = (payload ?? {}) as { message?: string; unrecoverable?: boolean; succeedOnAttempt?: number };
    if (p.succeedOnAttempt !== undefined && attempt >= p.succeedOnAttempt) return { attempt };
    const message = p.message ?? `failed on purpose (attempt ${attempt})`;
    throw p.unrecoverable ? new UnrecoverableError(message) : new Error(message);
  }
}

/**
 * Registers `sleep` and `fail` — stand-ins for slow and failing work in tests and benchmarks — only
 * when ENABLE_TEST_HANDLERS is on: a production worker offers the built-in `http`, `noop` and `log`
 * (DESIGN §5), and no task can make it wait or fail on purpose.
 */
@Injectable()
export class TestHandlers implements OnModuleInit {
  constructor(
    private readonly registry: HandlerRegistry,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onModuleInit(): void {
    if (this.config.enableTestHandlers)
      this.registry.registerEach({ sleep: new SleepHandler(), fail: new FailHandler() });
  }
}
