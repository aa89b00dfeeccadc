import { Module } from '@nestjs/common';
import { HandlersModule } from '@punctual/handlers';
import { QueueModule } from '@punctual/queue';
import { ApiKeysService } from './auth/api-keys.service.js';
import { CLOCK_ROLE, ClockService } from './clock/clock.service.js';
import { ClusterService } from './cluster/cluster.service.js';
import { ExecutionDispatcher } from './planning/execution-dispatcher.js';
import { PlannerService } from './planning/planner.service.js';
import { RelayService } from './planning/relay.service.js';
import { SchedulerService } from './planning/scheduler.service.js';
import { TaskApplyService } from './tasks/task-apply.service.js';
import { TaskChanges } from './tasks/task-changes.js';
import { TaskLifecycle } from './tasks/task-lifecycle.js';
import { TaskRunsService } from './tasks/task-runs.service.js';
import { TasksService } from './tasks/tasks.service.js';
import { ExecutionRunner } from './worker/execution-runner.js';
import { ExecutionsService } from './worker/executions.service.js';
import { OutboxNotifier } from './worker/outbox-notifier.js';
import { OverlapClaimer } from './worker/overlap-claimer.js';
import { WorkerDirectory } from './worker/worker-directory.js';
import { WorkerService } from './worker/worker.service.js';

/** The cluster's one clock (Postgres'), measured by this role. */
const clockOf = (role: string) => [{ provide: CLOCK_ROLE, useValue: role }, ClockService];

/** The scheduler role: leadership, planning and firing. Needs ConfigModule, DbModule and RedisModule. */
@Module({
  imports: [QueueModule],
  providers: [...clockOf('scheduler'), PlannerService, RelayService, ExecutionDispatcher, SchedulerService],
  exports: [PlannerService, ExecutionDispatcher, SchedulerService, ClockService],
})
export class SchedulerCoreModule {}

/** The worker role: the BullMQ processor and the execution runner. */
@Module({
  imports: [QueueModule, HandlersModule],
  providers: [...clockOf('worker'), ExecutionRunner, OverlapClaimer, WorkerDirectory, WorkerService, OutboxNotifier],
  exports: [ExecutionRunner, OutboxNotifier, ClockService],
})
export class WorkerCoreModule {}

/** Task lifecycle and operator actions for the admin API. */
@Module({
  imports: [QueueModule],
  providers: [...clockOf('api'), TasksService, TaskApplyService, TaskRunsService, TaskLifecycle, TaskChanges, ExecutionsService, ApiKeysService, WorkerDirectory, ClusterService],
  exports: [TasksService, TaskApplyService, TaskRunsService, ExecutionsService, ApiKeysService, WorkerDirectory, ClusterService, ClockService],
})
export class TasksCoreModule {}
