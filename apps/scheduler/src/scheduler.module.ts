import { type DynamicModule, Module } from '@nestjs/common';
import { type Config, ConfigModule } from '@punctual/config';
import { DbModule } from '@punctual/db';
import { HEALTH_DETAILS, HealthController, MetricsController, StoreMetrics } from '@punctual/health';
import { LoggingModule } from '@punctual/logging';
import { MetricsModule } from '@punctual/metrics';
import { TracingModule } from '@punctual/tracing';
import { RedisModule } from '@punctual/redis';
import { leaderDbSession, SchedulerCoreModule, SchedulerService } from '@punctual/scheduler';

/** The scheduler role: leader election, planning, firing; health on HEALTH_PORT. */
@Module({})
export class SchedulerModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: SchedulerModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(config, 'scheduler'),
        TracingModule.forRoot(config, 'scheduler'),
        DbModule.forRoot(leaderDbSession(config)),
        RedisModule,
        MetricsModule,
        SchedulerCoreModule,
      ],
      controllers: [HealthController, MetricsController],
      providers: [
        StoreMetrics,
        {
          provide: HEALTH_DETAILS,
          inject: [SchedulerService],
          useFactory: (s: SchedulerService) => () => ({ leader: s.isLeader, shards: s.ledShards }),
        },
      ],
    };
  }
}
