import { redactPayload } from '@punctual/contract';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { HandlerRegistry } from './handler-registry.js';
import { HttpHandler } from './http/http.handler.js';
import type { TaskHandlerContext, TaskHandlerImpl } from './task-handler.js';

/** Returns at once: for tests, demos and benchmarks. */
export class NoopHandler implements TaskHandlerImpl {
  async run(): Promise<null> {
    return null;
  }
}

/** Logs the payload and returns it. */
export class LogHandler implements TaskHandlerImpl {
  async run({ payload, task, log }: TaskHandlerContext): Promise<unknown> {
    log.info('log handler', { payload: redactPayload(payload, task.secretFields) });
    return { logged: true };
  }
}

/**
 * Registers the built-in handlers — `http`, `noop` and `log` (DESIGN §5) — when
 * WORKER_BUILTIN_HANDLERS is on: Punctual's own worker offers them; a worker inside an application
 * offers only the application's handlers unless told to (`builtinHandlers: true`), so it does not
 * run everyone's demo tasks or webhooks beside its own work.
 */
@Injectable()
export class BuiltinHandlers implements OnModuleInit {
  constructor(
    private readonly registry: HandlerRegistry,
    @Inject(CONFIG) private readonly config: Config,
    private readonly http: HttpHandler,
  ) {}

  onModuleInit(): void {
    if (this.config.builtinHandlers)
      this.registry.registerEach({ http: this.http, noop: new NoopHandler(), log: new LogHandler() });
  }
}
