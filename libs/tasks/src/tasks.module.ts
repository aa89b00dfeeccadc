import { Module } from '@nestjs/common';
import { ClockModule } from '@punctual/clock';
import { QueueModule } from '@punctual/queue';
import { CalendarsService } from './calendars.service.js';
import { ExecutionViews } from './execution-views.service.js';
import { ExecutionsService } from './executions.service.js';
import { TaskApplyService } from './task-apply.service.js';
import { TaskChanges } from './task-changes.js';
import { TaskLifecycle } from './task-lifecycle.js';
import { TaskRunsService } from './task-runs.service.js';
import { TasksService } from './tasks.service.js';
import { TaskViews } from './task-views.service.js';
import { TimelineService } from './timeline/timeline.service.js';
import { ChangePreviews } from './change-preview.js';
import { TaskVersionsService } from './task-versions.service.js';

/** Task lifecycle and operator actions for the admin API. Needs ConfigModule, DbModule, RedisModule and MetricsModule. */
@Module({
  imports: [QueueModule, ClockModule.forRole('api')],
  providers: [
    CalendarsService,
    TaskViews,
    TasksService,
    TaskApplyService,
    TaskRunsService,
    TaskLifecycle,
    TaskChanges,
    ExecutionsService,
    ExecutionViews,
    TimelineService,
    ChangePreviews,
    TaskVersionsService,
  ],
  exports: [
    CalendarsService,
    TaskViews,
    TasksService,
    TaskApplyService,
    TaskRunsService,
    ExecutionsService,
    ExecutionViews,
    TimelineService,
    TaskVersionsService,
    ClockModule,
  ],
})
export class TasksCoreModule {}
