import { redactPayload } from './redact.js';
import { TaskHandler, type TaskHandlerContext, type TaskHandlerImpl } from './task-handler.js';

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
