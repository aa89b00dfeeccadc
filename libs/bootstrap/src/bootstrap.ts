import type { INestApplication } from '@nestjs/common';
import { ConfigError } from '@punctual/config';
import { PinoNestLogger, StartUpAtDebug } from '@punctual/logging';

/**
 * Common start-up of every app: pino as Nest's logger (its start-up chatter at debug level), and a clean stop on SIGTERM/SIGINT — the
 * app closes (leadership released, running handlers drained, connections closed) and the process
 * exits 0. Nest's own shutdown hooks re-raise the signal, which orchestrators read as a crash.
 * A {@link ConfigError} thrown while the app starts (a check that needs Postgres, e.g. the shard
 * count) ends it as a bad variable does: its one line on stderr, exit 78 (EX_CONFIG).
 */
export async function startApp(app: INestApplication, port: number, host = '0.0.0.0'): Promise<void> {
  const logger = app.get(PinoNestLogger);
  app.useLogger(new StartUpAtDebug(logger));
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received; shutting down`);
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await app.listen(port, host);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
  logger.log(`listening on port ${port}`);
}
