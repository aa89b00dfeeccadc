import { type INestApplicationContext, Injectable, type LoggerService, Module } from '@nestjs/common';
import { ModuleRef, NestFactory } from '@nestjs/core';
import { PrismaService } from '@punctual/db';
import { createPino, PinoNestLogger } from '@punctual/logging';
import { ExecutionsQueue } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
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
 * It resolves once it has connected to Postgres and Redis (it waits for a Redis that is not up
 * yet); when the start fails, the connections it opened are closed before the error is thrown.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<PunctualWorker> {
  const config = workerConfig(options);
  const logger = options.logger ?? new PinoNestLogger(createPino(config, 'worker'));
  // Nest loses a context whose start failed: what it had opened is found through this and closed.
  let modules: ModuleRef | undefined;
  @Injectable()
  class StartWatch {
    constructor(ref: ModuleRef) {
      modules = ref;
    }
  }
  @Module({ imports: [PunctualWorkerModule.forConfig(config, options.handlers)], providers: [StartWatch] })
  class PlainWorkerModule {}
  try {
    const app = await NestFactory.createApplicationContext(PlainWorkerModule, { logger, abortOnError: false });
    return { app, close: () => app.close() };
  } catch (error) {
    const opened = (type: typeof ExecutionsQueue | typeof PrismaService | typeof RedisService) => {
      try {
        return modules?.get<{ onApplicationShutdown(): Promise<void> }>(type, { strict: false });
      } catch {
        return undefined; // not made before the start failed
      }
    };
    // The queue's connection comes from Redis' set, so Redis closes last.
    for (const type of [ExecutionsQueue, PrismaService, RedisService]) await opened(type)?.onApplicationShutdown().catch(() => undefined);
    throw error;
  }
}
