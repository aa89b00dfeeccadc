import { type DynamicModule, Module } from '@nestjs/common';
import { type Config, ConfigModule } from '@punctual/config';
import { DbModule } from '@punctual/db';
import { HealthController, LoggingModule, MetricsController, MetricsModule, TracingModule } from '@punctual/observability';
import { RedisModule } from '@punctual/redis';
import { WorkerCoreModule } from '@punctual/worker';

/** The worker role: runs executions from the queue; health on HEALTH_PORT. */
@Module({})
export class WorkerModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: WorkerModule,
      imports: [ConfigModule.forRoot(config), LoggingModule.forRoot(config, 'worker'), TracingModule.forRoot(config, 'worker'), DbModule.forRoot(), RedisModule, MetricsModule, WorkerCoreModule],
      controllers: [HealthController, MetricsController],
    };
  }
}
