export { ApiKeysRepository } from './api-keys.repository.js';
export { type AuditEntry, AuditRepository } from './audit.repository.js';
export { DbModule } from './db.module.js';
export { type ClaimResult, type ExecutionFilter, ExecutionsRepository, type PlannedExecution } from './executions.repository.js';
export {
  type ApiKey,
  type ApiKeyRole,
  type AuditLog,
  type ExecutionEvent,
  type ExecutionStatus,
  type ExecutionTrigger,
  type Outbox,
  Prisma,
  PrismaClient,
  type SkipReason,
  type Task,
  type TaskExecution,
  type TaskStatus,
} from './generated/prisma/client.js';
export { appliedMigrations, ensureDatabase, findMigrationsDir, migrate, MigrationError, readMigrations } from './migrator.js';
export { OutboxRepository } from './outbox.repository.js';
export { type Db, PrismaService } from './prisma.service.js';
export { SchedulerStateRepository } from './scheduler-state.repository.js';
export { type CursorAdvance, type TaskListFilter, TaskNameTakenError, TasksRepository } from './tasks.repository.js';
