/**
 * Postgres through Prisma and pg: the schema's generated client, the migrator, and one repository
 * per table or concern, each owning its SQL, every state transition one method with the expected
 * state in its `WHERE` and the leader's epoch as its fence.
 *
 * @imports @punctual/config, @punctual/contract, @punctual/metrics, @punctual/planning
 * @packageDocumentation
 */
export { ApiKeysRepository } from './api-keys.repository.js';
export { type AuditEntry, AuditRepository } from './audit.repository.js';
export { type Backlog, BacklogRepository } from './backlog.repository.js';
export { DbModule } from './db.module.js';
export { epochFence, inShard, type LeaderFence, type ShardFence, shardFence, shardOfSql } from './epoch-fence.js';
export { AttemptsRepository, type RecordedSuccesses } from './executions/outcome/attempts.repository.js';
export { type ClaimRead, executionFromClaimed } from './executions/claim/claim.rows.js';
export {
  type ClaimAnswer,
  ClaimsRepository,
  type ClaimWrite,
  type DirectClaim,
} from './executions/claim/claims.repository.js';
export { DEFINITIONS_KEPT, TaskDefinitions } from './executions/claim/task-definitions.js';
export { CLAIM_DIRECT, STARTS_WITHOUT_JUDGEMENT } from './executions/claim/claim-statements.js';
export { SUCCEED_AND_HAND_OVER } from './executions/outcome/outcome-statements.js';
export { type HandedTurn, type ParkRequest, TurnsRepository } from './executions/turns/turns.repository.js';
export { FlowControlRepository, type FlowKeyLoad } from './executions/claim/flow-control.repository.js';
export { EXECUTION_HISTORY, type MovedExecution } from './executions/execution-transition.js';
export {
  type ExecutionFilter,
  type ExecutionHistoryEvent,
  ExecutionQueriesRepository,
} from './executions/execution-queries.repository.js';
export {
  ExecutionTransitionsRepository,
  type NewExecution,
  type ReplannedExecution,
  type UnstartedExecution,
} from './executions/execution-transitions.repository.js';
export {
  type AwaitingCursor,
  type AwaitingJob,
  type FireableRow,
  LeaderExecutionsRepository,
  type LateRow,
} from './executions/leader-executions.repository.js';
export {
  type ApiKey,
  type ApiKeyRole,
  type AuditLog,
  type Calendar,
  type ExecutionEvent,
  type ExecutionStatus,
  type ExecutionTrigger,
  type MisfirePolicy,
  type Namespace,
  type OverlapPolicy,
  type Outbox,
  Prisma,
  PrismaClient,
  type SkipReason,
  type Task,
  type TaskExecution,
  type TaskStatus,
} from './generated/prisma/client.js';
export {
  appliedMigrations,
  ensureDatabase,
  findMigrationsDir,
  migrate,
  MigrationError,
  readMigrations,
} from './migrator.js';
export {
  type NamespaceFields,
  type NamespaceInUse,
  NamespacesRepository,
  type QuotaMetric,
} from './namespaces.repository.js';
export { OutboxRepository } from './outbox.repository.js';
export {
  type HistoryPartition,
  HistoryPartitionsRepository,
  type TableSize,
} from './history/history-partitions.repository.js';
export { HistoryPruneRepository, type PrunedCounts } from './history/history-prune.repository.js';
export {
  type ClusterRetentionView,
  HistoryRetention,
  type LongestDelay,
  type NamespaceRetentionView,
} from './history/history-retention.js';
export { HistoryRoom, NoRoomError } from './history/history-room.js';
export {
  HorizonPassedError,
  LiveHorizonRepository,
  RAISE_LAG_MS,
  WRITE_LAG_MS,
} from './history/live-horizon.repository.js';
export { type TaskVersionRow, TaskVersionsRepository } from './task-versions.repository.js';
export {
  type CalendarChange,
  type SlotEvent,
  type SlotRow,
  type TaskChange,
  TimelineRepository,
} from './timeline.repository.js';
export {
  hasSqlState,
  isConnectionError,
  isForeignKeyViolation,
  isLockTimeout,
  isUniqueViolation,
} from './db-errors.js';
export { DB_SESSION, type Db, type DbSessionSettings, DEFAULT_DB_SESSION, PrismaService } from './prisma.service.js';
export {
  type Leadership,
  SchedulerStateRepository,
  type ShardState,
  unledPeriods,
} from './scheduler-state.repository.js';
export { TaskHealthRepository, type TaskHealthRow } from './tasks/task-health.repository.js';
export { type CalendarFields, type CalendarInUse, CalendarsRepository } from './calendars.repository.js';
export {
  type CursorMove,
  PLAN_ERROR_RETRY_MS,
  type PlanError,
  TaskCursorsRepository,
} from './tasks/task-cursors.repository.js';
export { NamespaceGoneError, QuotaExceededError, TaskNameTakenError } from './tasks/task-errors.js';
export { type TaskListFilter, TasksRepository } from './tasks/tasks.repository.js';
