import type { LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';

/**
 * Nest's logger over pino. Nest's `Logger` calls it as `(message, ...params, context)` — the last
 * parameter is the caller's context when there is more than one — and this code base logs
 * `(fields, message)`: the fields become the line's fields and `context` one of them.
 */
export class PinoNestLogger implements LoggerService {
  constructor(readonly pino: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    // A logger without a context (Nest's own, a static call) ends with the stack, not a context.
    const hasContext = params.length > 0 && !isStack(params.at(-1));
    const rest = hasContext ? params.slice(0, -1) : params;
    if (hasContext) fields.context = params.at(-1);
    if (message instanceof Error) this.pino[level]({ ...fields, err: message }, ...(rest as [string]));
    else if (typeof message === 'object' && message !== null)
      this.pino[level]({ ...fields, ...message }, ...(rest as [string]));
    else if (level === 'error' && isStack(rest[0]))
      this.pino[level]({ ...fields, err: { message: String(message), stack: rest[0] } }, String(message));
    else this.pino[level](fields, String(message), ...rest);
  }
}

/** Nest's exception handler logs `(message, stack, context)`: the stack belongs on `err`, not in the message. */
function isStack(value: unknown): value is string {
  return typeof value === 'string' && /\n\s+at /.test(value);
}
