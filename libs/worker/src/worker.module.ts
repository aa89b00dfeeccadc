import { Module } from '@nestjs/common';
import { ClockModule } from '@punctual/clock';
import { HandlersModule } from '@punctual/handlers';
import { QueueModule } from '@punctual/queue';
import { ExecutionRunner } from './run/execution-runner.js';
import { OutboxNotifier } from './outcome/outbox-notifier.js';
import { ExecutionClaimer } from './claim/execution-claimer.js';
import { TurnHandover } from './claim/turn-handover.js';
import { OutcomeRecorder } from './outcome/outcome-recorder.js';
import { WorkerAnnouncer } from './intake/worker-announcer.js';
import { WorkerService } from './intake/worker.service.js';

/** The worker role: the BullMQ processor and the execution runner. Needs ConfigModule, DbModule, RedisModule and MetricsModule. */
@Module({
  imports: [QueueModule, HandlersModule, ClockModule.forRole('worker')],
  providers: [
    ExecutionRunner,
    ExecutionClaimer,
    TurnHandover,
    OutcomeRecorder,
    WorkerService,
    OutboxNotifier,
    WorkerAnnouncer,
  ],
  exports: [ExecutionRunner, OutboxNotifier, ClockModule],
})
export class WorkerCoreModule {}
