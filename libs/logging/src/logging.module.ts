import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type DynamicModule,
  Inject,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  RequestMethod,
} from '@nestjs/common';
import type { Config } from '@punctual/config';
import { pino } from 'pino';
import { pinoHttp } from 'pino-http';
import { PinoNestLogger } from './pino-logger.js';
import { developmentHttpMessages, developmentTransport } from './pretty-logs.js';

/** Paths that may carry secrets: never written to logs. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'secret',
  '*.secret',
  'apiKey',
  '*.apiKey',
  'key',
];

/**
 * Probes and scrapes get no request logger: binding one runs each request in an
 * AsyncLocalStorage context, and once a process has done that, every promise it creates pays for
 * a hook — a worker's hot path included.
 */
const QUIET_PATHS = ['health/live', 'health/ready', 'metrics'];

const REQUEST_LOGGER = Symbol('REQUEST_LOGGER');

type RequestLogger = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/** The process's pino logger: JSON lines with the app's name and instance on each (readable lines in development). */
export function createPino(config: Config, app: string) {
  return pino({
    level: config.logLevel,
    base: { app, instance: config.instanceId },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(config.nodeEnv === 'development' ? { transport: developmentTransport() } : {}),
  });
}

/** JSON logs through pino: Nest's logger (`PinoNestLogger`) and one line per HTTP request. */
@Module({})
export class LoggingModule implements NestModule {
  static forRoot(config: Config, app: string): DynamicModule {
    const logger = new PinoNestLogger(createPino(config, app));
    const requestLogger: RequestLogger = pinoHttp({
      logger: logger.pino,
      quietReqLogger: true,
      ...(config.nodeEnv === 'development' ? developmentHttpMessages() : {}),
    });
    return {
      module: LoggingModule,
      global: true,
      providers: [
        { provide: PinoNestLogger, useValue: logger },
        { provide: REQUEST_LOGGER, useValue: requestLogger },
      ],
      exports: [PinoNestLogger],
    };
  }

  constructor(@Inject(REQUEST_LOGGER) private readonly requestLogger: RequestLogger) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(this.requestLogger)
      .exclude(...QUIET_PATHS.map((path) => ({ path, method: RequestMethod.ALL })))
      .forRoutes({ path: '{*path}', method: RequestMethod.ALL });
  }
}
