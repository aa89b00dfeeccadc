import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { type Config, ConfigModule } from '@punctual/config';
import { TasksCoreModule } from '@punctual/core';
import { DbModule } from '@punctual/db';
import { HealthController, LoggingModule, MetricsModule } from '@punctual/observability';
import { RedisModule } from '@punctual/redis';
import { ADMIN_KEY, ApiKeyGuard } from './auth/api-key.guard.js';
import { ExecutionsController } from './executions/executions.controller.js';
import { ErrorFilter } from './http/error.filter.js';
import { createValidationPipe } from './http/validation.pipe.js';
import { TasksController } from './tasks/tasks.controller.js';

/** The admin HTTP API. */
@Module({})
export class ApiModule {
  static forRoot(config: Config, adminKey: string): DynamicModule {
    return {
      module: ApiModule,
      imports: [ConfigModule.forRoot(config), LoggingModule.forRoot(config, 'api'), DbModule, RedisModule, MetricsModule, TasksCoreModule],
      controllers: [TasksController, ExecutionsController, HealthController],
      providers: [
        { provide: ADMIN_KEY, useValue: adminKey },
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useClass: ErrorFilter },
        { provide: APP_PIPE, useFactory: createValidationPipe },
      ],
    };
  }
}
