import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { EXECUTIONS_QUEUE, type ExecutionJobData } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { type Job, Worker } from 'bullmq';
import { ExecutionRunner } from './execution-runner.js';

/** The worker role: a BullMQ worker on the executions queue that hands each job to the runner. */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WorkerService.name);
  private worker: Worker<ExecutionJobData> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly runner: ExecutionRunner,
  ) {}

  onApplicationBootstrap(): void {
    this.worker = new Worker<ExecutionJobData>(
      EXECUTIONS_QUEUE,
      (job: Job<ExecutionJobData>) =>
        this.runner.runExecution(job.data.executionId, {
          workerId: this.config.instanceId,
          progress: (value) => job.updateProgress(value),
        }),
      { connection: this.redis.connect(), prefix: this.redis.prefix, concurrency: this.config.workerConcurrency },
    );
    this.worker.on('error', (error) => this.logger.error({ err: error }, 'worker error'));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.worker?.close();
  }
}
