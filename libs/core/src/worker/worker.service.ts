import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { EXECUTION_CANCEL_CHANNEL, EXECUTIONS_QUEUE, type ExecutionJobData } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { HandlerRegistry } from '@punctual/handlers';
import { ExecutionRunner } from './execution-runner.js';
import { WorkerDirectory } from './worker-directory.js';
import { OverlapClaimer } from './overlap-claimer.js';

/**
 * The worker role: a BullMQ worker on the executions queue that hands each job to the runner, and
 * a subscriber that aborts executions cancelled elsewhere. On shutdown it stops taking jobs, lets
 * running handlers finish for up to SHUTDOWN_GRACE_MS, then aborts and hands back the rest.
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorkerService.name);
  private worker: Worker<ExecutionJobData> | null = null;
  private subscriber: Redis | null = null;
  private announcer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly runner: ExecutionRunner,
    private readonly claimer: OverlapClaimer,
    private readonly directory: WorkerDirectory,
    private readonly handlers: HandlerRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber = this.redis.connect();
    await this.subscriber.subscribe(this.redis.key(EXECUTION_CANCEL_CHANNEL));
    this.subscriber.on('message', (_channel, executionId: string) => this.runner.abortExecution(executionId, 'cancelled'));
    this.worker = new Worker<ExecutionJobData>(
      EXECUTIONS_QUEUE,
      (job: Job<ExecutionJobData>) =>
        this.runner.runExecution(job.data.executionId, {
          workerId: this.config.instanceId,
          fireAt: job.data.fireAt,
          progress: (value) => job.updateProgress(value),
        }),
      { connection: this.redis.connect(), prefix: this.redis.prefix, concurrency: this.config.workerConcurrency },
    );
    this.worker.on('error', (error) => this.logger.error({ err: error }, 'worker error'));
    const announce = () => this.directory.announce(this.config.instanceId, this.handlers.names()).catch(() => undefined);
    await announce();
    this.announcer = setInterval(announce, 15_000);
  }

  async onModuleDestroy(): Promise<void> {
    if (!this.worker) return;
    if (this.announcer) clearInterval(this.announcer);
    await this.directory.withdraw(this.config.instanceId).catch(() => undefined);
    this.claimer.stop();
    const closing = this.worker.close();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace-over'>((resolve) => (timer = setTimeout(() => resolve('grace-over'), this.config.shutdownGraceMs)));
    if ((await Promise.race([closing.then(() => 'closed' as const), graceOver])) === 'grace-over') {
      this.logger.warn({ running: this.runner.running }, 'shutdown grace over: aborting running handlers');
      this.runner.abortAll();
    }
    clearTimeout(timer);
    await closing;
    await this.subscriber?.quit().catch(() => undefined);
  }
}
