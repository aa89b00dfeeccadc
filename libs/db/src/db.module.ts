import { Global, Module } from '@nestjs/common';
import { ExecutionsRepository } from './executions.repository.js';
import { ApiKeysRepository } from './api-keys.repository.js';
import { AuditRepository } from './audit.repository.js';
import { OutboxRepository } from './outbox.repository.js';
import { PrismaService } from './prisma.service.js';
import { SchedulerStateRepository } from './scheduler-state.repository.js';
import { TasksRepository } from './tasks.repository.js';

/** Postgres access: the Prisma client and the repositories that own each table's SQL. */
@Global()
@Module({
  providers: [PrismaService, TasksRepository, ExecutionsRepository, SchedulerStateRepository, OutboxRepository, ApiKeysRepository, AuditRepository],
  exports: [PrismaService, TasksRepository, ExecutionsRepository, SchedulerStateRepository, OutboxRepository, ApiKeysRepository, AuditRepository],
})
export class DbModule {}
