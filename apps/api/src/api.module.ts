import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { AuthModule } from '@punctual/auth';
import { ClusterModule } from '@punctual/cluster';
import { type Config, ConfigModule } from '@punctual/config';
import { DbModule } from '@punctual/db';
import { HealthController } from '@punctual/health';
import { LoggingModule } from '@punctual/logging';
import { MetricsModule } from '@punctual/metrics';
import { QueueModule } from '@punctual/queue';
import { RedisModule } from '@punctual/redis';
import { TasksCoreModule } from '@punctual/tasks';
import {
  ApiKeysController,
  AuditController,
  ClusterController,
  HandlersController,
} from './admin/admin.controllers.js';
import { ApiMetricsController } from './admin/metrics.controller.js';
import { ApiKeyPresenceCheck } from './admin-key.js';
import { ApiKeyGuard } from './auth/api-key.guard.js';
import { BrowserSessionStore } from './auth/browser-session.store.js';
import { CalendarsController } from './calendars/calendars.controller.js';
import { ExecutionsController } from './executions/executions.controller.js';
import { SchedulesController } from './schedules/schedules.controller.js';
import { ErrorFilter } from './http/error.filter.js';
import { UnknownQueryInterceptor } from './http/unknown-query.interceptor.js';
import { BoardQueues } from './admin/bull-board.js';
import { TasksController } from './tasks/tasks.controller.js';
import { NamespacesController } from './namespaces/namespaces.controller.js';

/** The admin HTTP API. */
@Module({})
export class ApiModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: ApiModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(config, 'api'),
        DbModule.forRoot(),
        RedisModule,
        MetricsModule,
        QueueModule,
        TasksCoreModule,
        AuthModule,
        ClusterModule,
      ],
      controllers: [
        TasksController,
        NamespacesController,
        ExecutionsController,
        SchedulesController,
        CalendarsController,
        ApiKeysController,
        AuditController,
        HandlersController,
        ClusterController,
        ApiMetricsController,
        HealthController,
      ],
      providers: [
        ApiKeyPresenceCheck,
        BrowserSessionStore,
        BoardQueues,
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useClass: ErrorFilter },
        { provide: APP_INTERCEPTOR, useClass: UnknownQueryInterceptor },
      ],
    };
  }
}
