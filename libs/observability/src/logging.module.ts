import { type DynamicModule, Module, RequestMethod } from '@nestjs/common';
import type { Config } from '@punctual/config';
import { LoggerModule } from 'nestjs-pino';
import { developmentLogOptions } from './pretty-logs.js';

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

/** JSON logs through pino, one line per event, with the app's name on every line (readable lines in development). */
@Module({})
export class LoggingModule {
  static forRoot(config: Config, app: string): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          // Probes and scrapes get no request logger: binding one runs each request in an
          // AsyncLocalStorage context, and once a process has done that, every promise it creates
          // pays for a hook — a worker's hot path included.
          exclude: ['health/live', 'health/ready', 'metrics'].map((path) => ({ path, method: RequestMethod.ALL })),
          pinoHttp: {
            level: config.logLevel,
            base: { app, instance: config.instanceId },
            redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
            autoLogging: { ignore: (req) => (req.url ?? '').startsWith('/health') || req.url === '/metrics' },
            quietReqLogger: true,
            ...(config.nodeEnv === 'development' ? developmentLogOptions() : {}),
          },
        }),
      ],
    };
  }
}
