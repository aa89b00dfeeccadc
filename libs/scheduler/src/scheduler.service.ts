import { HandlerQueues } from '@punctual/cluster';
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { ClockService } from '@punctual/clock';
import {
  HistoryPartitionsRepository,
  HistoryPruneRepository,
  LeaderExecutionsRepository,
  LiveHorizonRepository,
  NamespacesRepository,
  SchedulerStateRepository,
  TurnsRepository,
} from '@punctual/db';
import { bestEffort, Metrics } from '@punctual/metrics';
import { leaderKey, shardShare } from '@punctual/planning';
import { TASKS_CHANGED_CHANNEL, tasksChangedBy } from '@punctual/queue';
import { RedisService, type RedisConnection } from '@punctual/redis';
import { ShardCountMismatchError } from './errors.js';
import { ExecutionDispatcher } from './execution-dispatcher.js';
import { HistoryKeeper } from './history-keeper.js';
import { PlannerService } from './planner.service.js';
import { RelayService } from './relay.service.js';
import { SchedulerMembers } from './scheduler-members.js';
import { ShardLeader } from './shard-leader.js';
import type { ShardServices } from './shard-services.js';

/** Balancing rounds a shard may stay without a leader before any scheduler takes it, whatever its share. */
const FREE_ROUNDS_BEFORE_ANYONE = 3;

/**
 * The scheduler role (DESIGN §4, §11): the cluster's tasks are split into `SCHEDULER_SHARDS` shards
 * by a hash of their id, each led by one scheduler exactly as a single leader would lead them all
 * (see {@link ShardLeader}). Every live scheduler announces itself in Redis and leads about
 * `ceil(shards / live schedulers)`: one that holds more hands the extra back, one that holds fewer
 * takes free shards — so shards spread within a few lease periods of a scheduler joining or dying.
 * With one shard every scheduler campaigns for it, as a single leader.
 */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SchedulerService.name);
  private readonly members: SchedulerMembers;
  private leaders: ShardLeader[] = [];
  private subscriber: RedisConnection | null = null;
  private balanceTimer: NodeJS.Timeout | null = null;
  private balancing = false;
  /** How many shards this scheduler should lead (until it first counts the live schedulers: all). */
  private share: number;
  /** The live schedulers counted at the previous round. */
  private liveBefore = 0;
  /** Attempts to take a shard's lock on their way: they count toward the share. */
  private attempts = 0;
  /** Per shard, the balancing rounds in a row that found it without a leader. */
  private readonly freeRounds = new Map<number, number>();
  /** The history lifecycle, kept by this scheduler while it leads shard 0. */
  readonly history: HistoryKeeper;
  private historyTimer: NodeJS.Timeout | null = null;
  private keeping: Promise<void> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly planner: PlannerService,
    private readonly executions: LeaderExecutionsRepository,
    private readonly state: SchedulerStateRepository,
    private readonly relay: RelayService,
    private readonly dispatcher: ExecutionDispatcher,
    private readonly clock: ClockService,
    private readonly metrics: Metrics,
    private readonly handlerQueues: HandlerQueues,
    private readonly namespaces: NamespacesRepository,
    private readonly turns: TurnsRepository,
    partitions: HistoryPartitionsRepository,
    horizon: LiveHorizonRepository,
    prune: HistoryPruneRepository,
  ) {
    this.share = config.schedulerShards;
    this.history = new HistoryKeeper(config, partitions, horizon, prune, metrics);
    // A dead scheduler leaves the count before its shard locks run out (announced every ttl/3, kept
    // 2/3 ttl): when they do, the others' share has grown and they take its shards at once. A live
    // one that misses an announcement only lets the others take free shards, never hands one back.
    this.members = new SchedulerMembers(
      redis.client,
      redis.key('scheduler', 'members'),
      config.instanceId,
      Math.floor((config.leaderTtlMs * 2) / 3),
    );
  }

  /** Leads at least one shard. */
  get isLeader(): boolean {
    return this.leaders.some((l) => l.isLeader);
  }

  /** The shards this scheduler leads now. */
  get ledShards(): number[] {
    return this.leaders.filter((l) => l.isLeader).map((l) => l.shard);
  }

  async onApplicationBootstrap(): Promise<void> {
    const shards = this.config.schedulerShards;
    const stored = await this.state.adoptShardCount(shards);
    if (stored !== shards) throw new ShardCountMismatchError(shards, stored);
    const {
      config,
      redis,
      planner,
      executions,
      state,
      relay,
      dispatcher,
      clock,
      metrics,
      handlerQueues,
      namespaces,
      turns,
    } = this;
    const services: ShardServices = {
      clock,
      metrics,
      lock: { redis, state, config },
      planning: { planner, config },
      firing: { dispatcher, turns, config },
      upkeep: { executions, relay, handlerQueues, namespaces, config },
    };
    for (let shard = 0; shard < shards; shard += 1) {
      this.leaders.push(new ShardLeader(services, { shard, shards, mayAcquire: () => this.mayAcquire(shard) }));
    }
    this.subscriber = this.redis.connect();
    await this.subscriber.subscribe(this.redis.key(TASKS_CHANGED_CHANNEL), this.redis.key('scheduler', 'released'));
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.redis.key(TASKS_CHANGED_CHANNEL))
        for (const leader of this.leaders) leader.onTasksChanged(tasksChangedBy(message));
      else this.leaders[Number(message)]?.nudge();
    });
    await this.balance();
    for (const leader of this.leaders) leader.start();
    // Neither the balance nor the history pass rejects: each logs its failure and tries next period.
    this.balanceTimer = setInterval(() => void this.balance(), Math.max(50, Math.floor(this.config.leaderTtlMs / 3)));
    // The first pass soon after start (a leader just elected makes the partitions it needs), then on the period.
    this.historyTimer = setTimeout(
      () => {
        void this.keepHistory(); // never rejects: a failed pass is logged and tried next period
        this.historyTimer = setInterval(() => void this.keepHistory(), this.config.historyPassMs);
      },
      Math.min(5_000, this.config.historyPassMs),
    );
  }

  /** One history pass, when this scheduler leads shard 0 (never two at once in one process). */
  private keepHistory(): Promise<void> {
    const shard0 = this.leaders[0];
    if (this.keeping || !shard0?.isLeader) return this.keeping ?? Promise.resolve();
    this.keeping = this.history
      .pass(new Date(), () => shard0.isLeader)
      .then(() => undefined)
      .catch((error: unknown) => this.logger.error({ err: error }, 'history pass failed; retrying next period'))
      .finally(() => {
        this.keeping = null;
      });
    return this.keeping;
  }

  async onModuleDestroy(): Promise<void> {
    if (this.balanceTimer) clearInterval(this.balanceTimer);
    this.balanceTimer = null;
    if (this.historyTimer) clearInterval(this.historyTimer);
    this.historyTimer = null;
    await this.keeping;
    await bestEffort(this.members.leave(), 'scheduler.leave');
    const held = this.leaders.filter((l) => l.hasLock);
    await Promise.all(this.leaders.map((l) => l.stop()));
    // The others try for the released shards now, not at their next attempt.
    for (const leader of held) await bestEffort(this.announceReleased(leader.shard), 'scheduler.announce-released');
    // A subscriber that cannot QUIT has lost its connection already: nothing is left to close.
    await this.subscriber?.quit().catch(() => undefined);
  }

  /** Whether a shard's elector may try for its lock now; see `LeaderElectorOptions.mayAcquire`. */
  private mayAcquire(shard: number): (() => void) | null {
    const held = this.leaders.filter((l) => l.hasLock).length + this.attempts;
    if (held >= this.share && (this.freeRounds.get(shard) ?? 0) < FREE_ROUNDS_BEFORE_ANYONE) return null;
    this.attempts += 1;
    return () => {
      this.attempts -= 1;
    };
  }

  /**
   * Counts the live schedulers, and so this one's share; hands back the shards it holds beyond
   * that share. A shard found without a leader round after round is taken by whoever can.
   */
  private async balance(): Promise<void> {
    if (this.balancing) return;
    this.balancing = true;
    try {
      const live = await this.members.announce();
      // The larger of this round's count and the last: a count that just fell (Redis emptied, every
      // scheduler announcing again) does not let the first to announce take every shard, only to
      // hand most back a round later. A scheduler that died is out of the count a round later.
      this.share = shardShare(this.config.schedulerShards, Math.max(live, this.liveBefore));
      this.liveBefore = live;
      if (this.leaders.length === 1) return;
      const free = await this.freeShards();
      const held = this.leaders.filter((l) => l.hasLock);
      for (const leader of held.slice(this.share)) {
        await leader.handBack();
        await this.announceReleased(leader.shard);
      }
      // Below its share (a scheduler died, or handed shards back): try for the free ones now.
      if (held.length < this.share) for (const shard of free) this.leaders[shard]!.nudge();
    } catch (error) {
      this.logger.warn({ err: error }, 'could not count the live schedulers; keeping the shards held');
    } finally {
      this.balancing = false;
    }
  }

  private async announceReleased(shard: number): Promise<void> {
    await this.redis.client.publish(this.redis.key('scheduler', 'released'), String(shard));
  }

  /** The shards no scheduler holds the lock of; counts the rounds each has been free. */
  private async freeShards(): Promise<number[]> {
    const pipeline = this.redis.client.pipeline();
    for (const leader of this.leaders) pipeline.exists(this.redis.key(...leaderKey(leader.shard, this.leaders.length)));
    const replies = (await pipeline.exec()) ?? [];
    const free: number[] = [];
    replies.forEach(([error, exists], shard) => {
      if (error || exists === 1) {
        this.freeRounds.delete(shard);
      } else {
        this.freeRounds.set(shard, (this.freeRounds.get(shard) ?? 0) + 1);
        free.push(shard);
      }
    });
    return free;
  }
}
