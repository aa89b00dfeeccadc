import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import type { TransportSingleOptions } from 'pino';
import type { Options } from 'pino-http';

/**
 * Development output (`NODE_ENV=development`, which `npm start` sets): one readable line per
 * event through pino-pretty, requests as `GET /v1/tasks 200 3ms`. Production, tests and the
 * image keep JSON, the format log pipelines read.
 */
export function developmentTransport(): TransportSingleOptions {
  return {
    target: 'pino-pretty',
    options: {
      singleLine: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,app,instance,context,req,res,reqId,responseTime,err.stack',
      messageFormat: '{if context}{context}: {end}{msg}',
    },
  };
}

/** Request lines in development: `GET /v1/tasks 200 3ms`. */
export function developmentHttpMessages(): Pick<Options, 'customSuccessMessage' | 'customErrorMessage'> {
  return {
    customSuccessMessage: (req: IncomingMessage, res: ServerResponse, ms: number) =>
      `${req.method} ${req.url} ${res.statusCode} ${Math.round(ms)}ms`,
    customErrorMessage: (req: IncomingMessage, res: ServerResponse, error: Error) =>
      `${req.method} ${req.url} ${res.statusCode} ${error.message}`,
  };
}

/** Nest's start-up chatter: one line per module and per route. Useful when debugging, noise otherwise. */
const START_UP_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

/** Passes Nest's log lines on, with its start-up chatter moved to debug level. */
export class StartUpAtDebug implements LoggerService {
  constructor(private readonly inner: LoggerService) {}

  log(message: unknown, ...params: unknown[]): void {
    const context = params.at(-1);
    if (typeof context === 'string' && START_UP_CONTEXTS.has(context)) this.inner.debug?.(message, ...params);
    else this.inner.log(message, ...params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.inner.error(message, ...params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.inner.warn(message, ...params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.inner.debug?.(message, ...params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.inner.verbose?.(message, ...params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    (this.inner.fatal ?? this.inner.error).call(this.inner, message, ...params);
  }
}
