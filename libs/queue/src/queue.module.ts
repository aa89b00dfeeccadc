import { Module } from '@nestjs/common';
import { ExecutionsQueue } from './executions.queue.js';

@Module({ providers: [ExecutionsQueue], exports: [ExecutionsQueue] })
export class QueueModule {}
