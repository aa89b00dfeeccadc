import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { BacklogRepository, FlowControlRepository, TaskHealthRepository } from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { successDeadline } from '@punctual/planning';
import { RedisService } from '@punctual/redis';

/** How often the stores are read: about one Prometheus scrape interval. */
const REFRESH_MS = 15_000;
/** Tasks with an `slo` given per-task series, at most (by name): a guard on cardinality, not a quota. */
const SLO_TASKS_MAX = 1_000;

/**
 * Gauges of what the stores hold rather than what this process did: dead letters and the
 * outbox backlog and the flow-control keys' loads in Postgres, Redis' `maxmemory-policy` (which an operator may change at run time).
 * The scheduler role runs it; a failed read keeps the previous values and is logged.
 */
@Injectable()
export class StoreMetrics implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(StoreMetrics.name);
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly backlog: BacklogRepository,
    private readonly flow: FlowControlRepository,
    private readonly health: TaskHealthRepository,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
  ) {}

  onApplicationBootstrap(): void {
    void this.refreshOnce(); // never rejects: each read it makes logs its own failure
    this.timer = setInterval(() => void this.refreshOnce(), REFRESH_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
  }

  /** One read of both stores; a read still running (a store that hangs) is not doubled. */
  refreshOnce(): Promise<void> {
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /**
   * The latest success and the time allowed after it of each active task with an `slo`; a task
   * paused, completed, deleted or without an slo loses its series (nothing to alert on).
   */
  private async refreshTaskSeries(): Promise<void> {
    const tasks = await this.health.sloTasks(SLO_TASKS_MAX);
    this.metrics.taskLastSuccess.reset();
    this.metrics.taskExpectedInterval.reset();
    for (const { task, lastSuccessSlot, lastSuccessAt } of tasks) {
      const since = lastSuccessAt ?? task.createdAt;
      let deadline: Date | null = null;
      try {
        deadline = successDeadline(task, lastSuccessSlot);
      } catch {
        // A schedule that cannot be computed has its own error (lastError) and no deadline.
      }
      this.metrics.taskLastSuccess.set({ task: task.name }, since.getTime() / 1000);
      if (deadline)
        this.metrics.taskExpectedInterval.set(
          { task: task.name },
          Math.max(0, deadline.getTime() - since.getTime()) / 1000,
        );
    }
  }

  private async refresh(): Promise<void> {
    try {
      const backlog = await this.backlog.read();
      this.metrics.deadLetters.set(backlog.deadLetters);
      this.metrics.outboxPending.set(backlog.outboxPending);
      this.metrics.outboxOldestPending.set(backlog.outboxOldestPendingSeconds);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read the backlog for metrics');
    }
    try {
      // Only the named keys and the busiest few get a series: keys are user data, unbounded.
      const loads =
        this.config.flowMetricsTop + this.config.flowMetricsKeys.length > 0
          ? await this.flow.busiestKeys(this.config.flowMetricsTop, this.config.flowMetricsKeys)
          : [];
      this.metrics.flowWaiting.reset();
      this.metrics.flowRunning.reset();
      for (const key of this.config.flowMetricsKeys) {
        this.metrics.flowWaiting.set({ key }, 0);
        this.metrics.flowRunning.set({ key }, 0);
      }
      for (const load of loads) {
        this.metrics.flowWaiting.set({ key: load.key }, load.waiting);
        this.metrics.flowRunning.set({ key: load.key }, load.running);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read the flow-control keys for metrics');
    }
    try {
      await this.refreshTaskSeries();
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read the tasks with an slo for metrics');
    }
    this.metrics.observeRedisPolicy(await this.redis.maxmemoryPolicy());
  }
}
