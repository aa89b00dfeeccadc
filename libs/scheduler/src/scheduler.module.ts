import { Module } from '@nestjs/common';
import { ClockModule } from '@punctual/clock';
import { ClusterModule } from '@punctual/cluster';
import { QueueModule } from '@punctual/queue';
import { ExecutionDispatcher } from './execution-dispatcher.js';
import { PlannerService } from './planner.service.js';
import { RelayService } from './relay.service.js';
import { SchedulerService } from './scheduler.service.js';

/** The scheduler role: leadership, planning and firing. Needs ConfigModule, DbModule, RedisModule and MetricsModule. */
@Module({
  imports: [QueueModule, ClusterModule, ClockModule.forRole('scheduler')],
  providers: [PlannerService, RelayService, ExecutionDispatcher, SchedulerService],
  exports: [PlannerService, ExecutionDispatcher, SchedulerService, ClockModule],
})
export class SchedulerCoreModule {}
