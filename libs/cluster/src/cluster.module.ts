import { Module } from '@nestjs/common';
import { QueueModule } from '@punctual/queue';
import { ClusterService } from './cluster.service.js';
import { WorkerDirectory } from './worker-directory.js';

/** What the cluster looks like: the leader, the live workers and what they offer, queue depth, clock offsets. */
@Module({ imports: [QueueModule], providers: [ClusterService, WorkerDirectory], exports: [ClusterService, WorkerDirectory] })
export class ClusterModule {}
