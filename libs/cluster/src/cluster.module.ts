import { Module } from '@nestjs/common';
import { QueueModule } from '@punctual/queue';
import { ClusterService } from './cluster.service.js';
import { HandlerQueues } from './handler-queues.js';
import { WorkerDirectory } from './worker-directory.js';

/** What the cluster looks like: the leader, the live workers and what they offer, the handlers' queues and their depth, clock offsets. */
@Module({
  imports: [QueueModule],
  providers: [ClusterService, WorkerDirectory, HandlerQueues],
  exports: [ClusterService, WorkerDirectory, HandlerQueues],
})
export class ClusterModule {}
