import { type INestApplicationContext, Injectable, type LoggerService, Module } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, NestFactory } from '@nestjs/core';
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
 * It resolves once it has connected to Postgres and Redis (it waits for a Redis that is not up
 * yet); when the start fails, the connections it opened are closed before the error is thrown.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<PunctualWorker> {
  const config = workerConfig(options);
  const logger = options.logger ?? new PinoNestLogger(createPino(config, 'worker'));
  // Nest loses a context whose start failed, with whatever its providers had opened (connections,
  // timers): this keeps a way to the providers, to close them as the context's close() would.
  let discovery: DiscoveryService | undefined;
  @Injectable()
  class StartWatch {
    constructor(found: DiscoveryService) {
      discovery = found;
    }
  }
  @Module({
    imports: [DiscoveryModule, PunctualWorkerModule.forConfig(config, options.handlers)],
    providers: [StartWatch],
  })
  class PlainWorkerModule {}
  try {
    const app = await NestFactory.createApplicationContext(PlainWorkerModule, { logger, abortOnError: false });
    return { app, close: () => app.close() };
  } catch (error) {
    await closeProviders(discovery);
    throw error;
  }
}

const SHUTDOWN_HOOKS = ['onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown'] as const;

/**
 * Runs every made provider's shutdown hooks, in Nest's order of hooks, the providers of imported
 * modules last (Redis, whose connections the queue borrows, after the queue). A hook that fails is
 * passed over: the start's own error is the one reported.
 */
async function closeProviders(discovery: DiscoveryService | undefined): Promise<void> {
  const made = (discovery?.getProviders() ?? []).map(
    (wrapper) => wrapper.instance as Record<string, unknown> | undefined,
  );
  const instances = [
    ...new Set(made.filter((instance) => instance !== null && typeof instance === 'object')),
  ].reverse();
  for (const hook of SHUTDOWN_HOOKS) {
    for (const instance of instances) {
      const run = instance[hook];
      // A hook that fails must not stop the others: the process is ending either way.
      if (typeof run === 'function') await Promise.resolve(run.call(instance)).catch(() => undefined);
    }
  }
}
