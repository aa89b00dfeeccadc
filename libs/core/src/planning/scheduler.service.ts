import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { ExecutionsRepository, SchedulerStateRepository, type TaskExecution } from '@punctual/db';
import { ExecutionsQueue } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import type { Redis } from 'ioredis';
import { FencedOutError } from '../errors.js';
import { LeaderElector } from '../leader/leader-elector.js';
import { TASKS_CHANGED_CHANNEL } from '../tasks/tasks-changed.js';
import { FireTimer } from './fire-timer.js';
import { PlannerService } from './planner.service.js';

/** Rows adopted from a previous leader at election; the rest are picked up by the relay. */
const ADOPT_LIMIT = 100_000;

/**
 * The scheduler role: campaigns for leadership; while leading, plans due slots every tick (and at
 * once when the API announces a change) and fires planned rows at their `fire_at` as immediate
 * BullMQ jobs. On losing leadership it stops planning and firing at once.
 */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(SchedulerService.name);
  private readonly elector: LeaderElector;
  private readonly timer: FireTimer<TaskExecution>;
  private subscriber: Redis | null = null;
  private epoch: bigint | null = null;
  private planTimer: NodeJS.Timeout | null = null;
  private planning: Promise<void> | null = null;
  private replanRequested = false;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly planner: PlannerService,
    private readonly executions: ExecutionsRepository,
    private readonly state: SchedulerStateRepository,
    private readonly queue: ExecutionsQueue,
  ) {
    this.elector = new LeaderElector(redis.client, {
      key: redis.key('scheduler', 'leader'),
      instanceId: config.instanceId,
      ttlMs: config.leaderTtlMs,
      onElected: () => void this.lead(),
      onDeposed: (reason) => this.follow(reason),
    });
    this.timer = new FireTimer((due) => void this.fire(due));
  }

  get isLeader(): boolean {
    return this.elector.isLeader && this.epoch !== null;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber = this.redis.connect();
    await this.subscriber.subscribe(this.redis.key(TASKS_CHANGED_CHANNEL));
    this.subscriber.on('message', () => this.requestPlan());
    this.elector.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopPlanning();
    await this.planning?.catch(() => undefined);
    await this.elector.stop();
    await this.subscriber?.quit().catch(() => undefined);
  }

  private async lead(): Promise<void> {
    try {
      const epoch = await this.state.bumpEpoch(this.config.instanceId);
      if (!this.elector.isLeader) return;
      this.epoch = epoch;
      this.logger.log({ epoch: epoch.toString(), instance: this.config.instanceId }, 'became leader');
      // Adopt what the previous leader planned but never fired; late rows fire at once.
      this.timer.add(await this.executions.listScheduled(ADOPT_LIMIT));
      this.planTimer = setInterval(() => this.requestPlan(), this.config.planTickMs);
      this.requestPlan();
    } catch (error) {
      this.logger.error({ err: error }, 'could not take the epoch; stepping down');
      this.elector.depose('epoch not taken');
    }
  }

  private follow(reason: string): void {
    if (this.epoch !== null) this.logger.warn({ epoch: this.epoch.toString(), reason }, 'stepped down');
    this.stopPlanning();
  }

  private stopPlanning(): void {
    this.epoch = null;
    if (this.planTimer) clearInterval(this.planTimer);
    this.planTimer = null;
    this.timer.clear();
  }

  /** Coalesces plan requests: at most one pass runs, and one more follows if asked meanwhile. */
  private requestPlan(): void {
    if (this.epoch === null) return;
    if (this.planning) {
      this.replanRequested = true;
      return;
    }
    this.planning = this.planOnce().finally(() => {
      this.planning = null;
      if (this.replanRequested) {
        this.replanRequested = false;
        this.requestPlan();
      }
    });
  }

  private async planOnce(): Promise<void> {
    const epoch = this.epoch;
    if (epoch === null || !this.elector.isLeader) return;
    try {
      const planned = await this.planner.planDueSlots(epoch);
      if (this.epoch === epoch) this.timer.add(planned);
    } catch (error) {
      if (error instanceof FencedOutError) {
        this.logger.warn({ epoch: epoch.toString() }, 'fenced out by a newer leader');
        this.elector.depose('fenced out');
      } else {
        this.logger.error({ err: error }, 'planning failed; retrying next tick');
      }
    }
  }

  private async fire(due: TaskExecution[]): Promise<void> {
    if (!this.isLeader) return;
    const ids = due.map((e) => e.id);
    try {
      await this.queue.enqueueNow(ids);
      await this.executions.markQueued(ids);
    } catch (error) {
      this.logger.error({ err: error, count: ids.length }, 'firing failed; the relay will re-enqueue');
    }
  }
}
