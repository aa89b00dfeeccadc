import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { BacklogRepository, FlowControlRepository } from '@punctual/db';
import { RedisService } from '@punctual/redis';
import { Metrics } from './metrics.js';

/** How often the stores are read: about one Prometheus scrape interval. */
const REFRESH_MS = 15_000;

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
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
  ) {}

  onApplicationBootstrap(): void {
    void this.refreshOnce();
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
      const loads = this.config.flowMetricsTop + this.config.flowMetricsKeys.length > 0 ? await this.flow.busiestKeys(this.config.flowMetricsTop, this.config.flowMetricsKeys) : [];
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
    this.metrics.observeRedisPolicy(await this.redis.maxmemoryPolicy());
  }
}
