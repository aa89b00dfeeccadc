import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createPino, PinoNestLogger } from '@punctual/logging';
import { PunctualWorkerModule } from './punctual-worker.module.js';
import { type PunctualWorkerOptions, workerConfig } from './worker-options.js';

/** A worker started by {@link createWorker}. */
export interface PunctualWorker {
  /** Stops taking executions, lets running handlers finish (up to the grace), hands back the rest, and closes its connections. */
  close(): Promise<void>;
  /** The Nest application context underneath, for what a plain app does not need. */
  readonly app: INestApplicationContext;
}

/** {@link PunctualWorkerOptions}, and where the worker's log lines go (default: JSON lines through pino on stdout). */
export interface CreateWorkerOptions extends PunctualWorkerOptions {
  logger?: LoggerService;
}

/**
 * A Punctual worker for an app without Nest: runs the handlers given by name until {@link PunctualWorker.close}.
 * It does not listen to signals; a process that wants SIGTERM to drain calls `close()` on it.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<PunctualWorker> {
  const config = workerConfig(options);
  const logger = options.logger ?? new PinoNestLogger(createPino(config, 'worker'));
  const app = await NestFactory.createApplicationContext(PunctualWorkerModule.forConfig(config, options.handlers), { logger, abortOnError: false });
  await app.init();
  return { app, close: () => app.close() };
}
