import { type DynamicModule, Global, Module } from '@nestjs/common';
import { AttemptsRepository } from './executions/outcome/attempts.repository.js';
import { ClaimsRepository } from './executions/claim/claims.repository.js';
import { FlowControlRepository } from './executions/claim/flow-control.repository.js';
import { ExecutionQueriesRepository } from './executions/execution-queries.repository.js';
import { ExecutionTransitionsRepository } from './executions/execution-transitions.repository.js';
import { LeaderExecutionsRepository } from './executions/leader-executions.repository.js';
import { TurnsRepository } from './executions/turns/turns.repository.js';
import { ApiKeysRepository } from './api-keys.repository.js';
import { AuditRepository } from './audit.repository.js';
import { BacklogRepository } from './backlog.repository.js';
import { OutboxRepository } from './outbox.repository.js';
import { DB_SESSION, type DbSessionSettings, DEFAULT_DB_SESSION, PrismaService } from './prisma.service.js';
import { SchedulerStateRepository } from './scheduler-state.repository.js';
import { TasksRepository } from './tasks/tasks.repository.js';
import { TaskCursorsRepository } from './tasks/task-cursors.repository.js';
import { CalendarsRepository } from './calendars.repository.js';
import { TaskHealthRepository } from './tasks/task-health.repository.js';
import { TimelineRepository } from './timeline.repository.js';
import { TaskVersionsRepository } from './task-versions.repository.js';
import { NamespacesRepository } from './namespaces.repository.js';
import { HistoryPartitionsRepository } from './history/history-partitions.repository.js';
import { HistoryPruneRepository } from './history/history-prune.repository.js';
import { HistoryRetention } from './history/history-retention.js';
import { HistoryRoom } from './history/history-room.js';
import { LiveHorizonRepository } from './history/live-horizon.repository.js';

const REPOSITORIES = [
  PrismaService,
  TasksRepository,
  TaskCursorsRepository,
  ExecutionTransitionsRepository,
  ExecutionQueriesRepository,
  AttemptsRepository,
  ClaimsRepository,
  TurnsRepository,
  FlowControlRepository,
  LeaderExecutionsRepository,
  SchedulerStateRepository,
  OutboxRepository,
  ApiKeysRepository,
  AuditRepository,
  BacklogRepository,
  CalendarsRepository,
  TaskHealthRepository,
  TimelineRepository,
  TaskVersionsRepository,
  NamespacesRepository,
  HistoryPartitionsRepository,
  LiveHorizonRepository,
  HistoryRoom,
  HistoryPruneRepository,
  HistoryRetention,
];

/** Postgres access: the Prisma client and the repositories that own each table's SQL. */
@Global()
@Module({})
export class DbModule {
  /** `session`: the limits this role's connections run under (default {@link DEFAULT_DB_SESSION}). */
  static forRoot(session: DbSessionSettings = DEFAULT_DB_SESSION): DynamicModule {
    return {
      module: DbModule,
      providers: [{ provide: DB_SESSION, useValue: session }, ...REPOSITORIES],
      exports: REPOSITORIES,
    };
  }
}
