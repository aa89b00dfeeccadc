import type { INestApplication } from '@nestjs/common';
import { Logger } from 'nestjs-pino';

/**
 * Common start-up of every app: pino as Nest's logger, shutdown hooks (SIGTERM/SIGINT close the
 * app cleanly: leadership released, running handlers drained, connections closed) and exit 0.
 */
export async function startApp(app: INestApplication, port: number, host = '0.0.0.0'): Promise<void> {
  app.useLogger(app.get(Logger));
  app.enableShutdownHooks();
  await app.listen(port, host);
}
