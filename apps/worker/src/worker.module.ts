import { type DynamicModule, Module } from '@nestjs/common';
import type { Config } from '@punctual/config';
import { HealthController, MetricsController } from '@punctual/health';
import { LoggingModule } from '@punctual/logging';
import { TracingModule } from '@punctual/tracing';
import { PunctualWorkerModule } from '@punctual/worker';

/** The worker role: the worker module of libs/worker (the one apps embed), with logs, traces, health and metrics on HEALTH_PORT. */
@Module({})
export class WorkerModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        LoggingModule.forRoot(config, 'worker'),
        TracingModule.forRoot(config, 'worker'),
        PunctualWorkerModule.forConfig(config),
      ],
      controllers: [HealthController, MetricsController],
    };
  }
}
