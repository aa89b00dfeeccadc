import { Logger } from '@nestjs/common';
import { isLockTimeout, type ShardFence } from '@punctual/db';
import { leaderKey } from '@punctual/planning';
import { FencedOutError } from './errors.js';
import { LeaderElector } from './leader-elector.js';
import { RELEASE_INTERVAL_MS, ShardFiring } from './shard-firing.js';
import type { ShardServices } from './shard-services.js';
import { ShardUpkeep } from './shard-upkeep.js';

const RELAY_INTERVAL_MS = 2_000;

export interface ShardLeaderOptions {
  shard: number;
  shards: number;
  /** See `LeaderElectorOptions.mayAcquire`: the scheduler's share of shards decides. */
  mayAcquire?: () => (() => void) | null;
}

/**
 * One shard's leadership (DESIGN §4, per shard §11): it campaigns for the shard's Redis lock and,
 * once elected, takes the shard's epoch, adopts what the previous leader left, then plans every
 * tick and whenever the API announces a change. Firing and upkeep do the rest (see ShardFiring,
 * ShardUpkeep). Losing the lock or the epoch stops all three at once. Every write is fenced by the
 * epoch and touches only the shard's tasks, and every instant is Postgres' (see ClockService).
 */
export class ShardLeader {
  readonly shard: number;
  private readonly logger: Logger;
  private readonly elector: LeaderElector;
  private readonly firing: ShardFiring;
  private readonly upkeep: ShardUpkeep;
  private fence: ShardFence | null = null;
  private planTimer: NodeJS.Timeout | null = null;
  private relayTimer: NodeJS.Timeout | null = null;
  private releaseTimer: NodeJS.Timeout | null = null;
  private planning: Promise<void> | null = null;
  private replanRequested = false;
  private leading: Promise<void> | null = null;

  constructor(
    private readonly s: ShardServices,
    private readonly options: ShardLeaderOptions,
  ) {
    this.shard = options.shard;
    this.logger = new Logger(options.shards === 1 ? 'SchedulerService' : `SchedulerService[shard ${options.shard}]`);
    this.elector = new LeaderElector(s.lock.redis.client, {
      key: s.lock.redis.key(...leaderKey(options.shard, options.shards)),
      instanceId: s.lock.config.instanceId,
      ttlMs: s.lock.config.leaderTtlMs,
      mayAcquire: options.mayAcquire,
      onElected: () => {
        this.leading = this.lead();
      },
      onDeposed: (reason) => this.stepDown(reason),
    });
    const leading = { fence: () => this.fence, isLeader: () => this.elector.isLeader };
    this.firing = new ShardFiring(s.firing, leading, s.clock, s.metrics, this.logger, {
      shard: options.shard,
      releasePerSecond: Math.max(1, s.upkeep.config.catchupRate / options.shards),
    });
    this.upkeep = new ShardUpkeep(
      s.upkeep,
      s.lock,
      this.firing,
      leading,
      (fence, error, message) => this.onLeaderError(fence, error, message),
      s.clock,
      s.metrics,
      this.logger,
      options.shard,
    );
    s.metrics.leader.set(this.labels, 0);
  }

  private get labels() {
    return { shard: String(this.shard) };
  }

  /** Leading: the lock held and the shard's epoch taken. */
  get isLeader(): boolean {
    return this.elector.isLeader && this.fence !== null;
  }

  /** The lock is held (the epoch may still be on its way): counts toward the scheduler's share. */
  get hasLock(): boolean {
    return this.elector.hasLock;
  }

  start(): void {
    this.elector.start();
  }

  /** Tries for the lock now, not at the next period. */
  nudge(): void {
    this.elector.nudge();
  }

  /** Stops leading and campaigning; releases the lock if held. */
  async stop(): Promise<void> {
    const fence = this.fence;
    this.stopLeading();
    // Waits only: a planning pass logs its own failure (planOnce), there is nothing left to report.
    await this.planning?.catch(() => undefined);
    // Its leadership ends now in the shard's history, before the lock goes to the next leader.
    if (fence !== null) {
      await this.s.lock.state
        .release(fence)
        .catch((error: unknown) =>
          this.logger.warn(
            { err: error, shard: this.shard },
            'could not record the end of the leadership; it ends at its last heartbeat',
          ),
        );
    }
    await this.elector.stop();
  }

  /**
   * Gives the shard back cleanly (more than this scheduler's share): stops planning and firing,
   * lets the last planning pass end, releases the lock, and goes on campaigning (the share decides
   * whether it may take a shard again).
   */
  async handBack(): Promise<void> {
    this.logger.log({ shard: this.shard }, 'handing the shard back');
    // Waits only: taking the lead logs its own failure (lead), there is nothing left to report.
    await this.leading?.catch(() => undefined);
    await this.stop();
    this.elector.start();
  }

  /**
   * The API announced a change of tasks: plan at once, and sweep the rows it inserted for
   * `inserted` (`all`: any task) into the timer. Both coalesce: a burst of creates through the API
   * costs a few passes, not one per create.
   */
  onTasksChanged(inserted: string[] | 'all' = 'all'): void {
    this.requestPlan();
    this.upkeep.sweepInserted(inserted);
  }

  private async lead(): Promise<void> {
    try {
      const epoch = await this.takeEpoch();
      if (epoch === null || !this.elector.isLeader) return;
      const fence: ShardFence = { shard: this.shard, shards: this.options.shards, epoch };
      this.fence = fence;
      this.logger.log(
        { epoch: epoch.toString(), shard: this.shard, instance: this.s.lock.config.instanceId },
        'became leader',
      );
      this.s.metrics.leader.set(this.labels, 1);
      this.s.metrics.leaderChanges.inc({ change: 'elected' });
      await this.s.clock.measure();
      // Adopt what the previous leader left. Plan first, firing nothing yet: the late slots at the
      // cursors and the late rows it planned but never fired then share one misfire decision (no
      // catch-up run has started that the decision would have to take back). Then everything due
      // goes into the timer (what is due now fires at once).
      const planned = await this.s.planning.planner
        .planDueSlots(fence, () => this.s.clock.date())
        .catch((error: unknown) => {
          this.onLeaderError(fence, error, 'planning failed');
          return [];
        });
      await this.upkeep.resolveLate();
      // Everything planned and due is pushed again (a job already in the queue is not added twice),
      // whatever its age: the predecessor may have died before pushing it.
      await this.upkeep.sweepScheduled({ adopting: true });
      if (this.fence !== fence) return;
      // The rows of this first plan that are not due yet go into the timer too.
      this.firing.add(planned);
      this.planTimer = setInterval(() => this.requestPlan(), this.s.planning.config.planTickMs);
      this.relayTimer = setInterval(() => void this.upkeep.repair(), RELAY_INTERVAL_MS); // never rejects: it logs
      this.releaseTimer = setInterval(() => this.firing.releaseBacklog(), RELEASE_INTERVAL_MS);
      this.requestPlan();
    } catch (error) {
      this.logger.error({ err: error }, 'could not take the epoch; stepping down');
      this.elector.depose('epoch not taken');
    }
  }

  /**
   * Bumps the shard's epoch, trying again while this instance holds the lock: a frozen
   * predecessor's open transaction makes the bump wait (`lock_timeout`) until Postgres ends that
   * session (`idle_in_transaction_session_timeout`, below the lease). Null when leadership was lost meanwhile.
   */
  private async takeEpoch(): Promise<bigint | null> {
    for (;;) {
      try {
        return await this.s.lock.state.bumpEpoch(this.s.lock.config.instanceId, this.shard);
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
        this.logger.warn('the previous leader still holds the epoch; waiting for Postgres to end its session');
        if (!this.elector.isLeader) return null;
      }
    }
  }

  /** Leadership lost (lock gone or epoch fenced): stops planning and firing at once. */
  private stepDown(reason: string): void {
    if (this.fence !== null) {
      this.logger.warn({ epoch: this.fence.epoch.toString(), shard: this.shard, reason }, 'stepped down');
      this.s.metrics.leaderChanges.inc({ change: 'deposed' });
    }
    this.s.metrics.leader.set(this.labels, 0);
    this.stopLeading();
  }

  private stopLeading(): void {
    this.fence = null;
    if (this.planTimer) clearInterval(this.planTimer);
    if (this.relayTimer) clearInterval(this.relayTimer);
    if (this.releaseTimer) clearInterval(this.releaseTimer);
    this.planTimer = null;
    this.relayTimer = null;
    this.releaseTimer = null;
    this.firing.clear();
  }

  /** Coalesces plan requests: at most one pass runs, and one more follows if asked meanwhile. */
  private requestPlan(): void {
    if (this.fence === null) return;
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
    const fence = this.fence;
    if (fence === null || !this.elector.isLeader) return;
    try {
      const planned = await this.s.planning.planner.planDueSlots(fence, () => this.s.clock.date());
      if (this.fence === fence) this.firing.add(planned);
    } catch (error) {
      this.onLeaderError(fence, error, 'planning failed; retrying next tick');
    }
  }

  private onLeaderError(fence: ShardFence, error: unknown, message: string): void {
    if (error instanceof FencedOutError) {
      this.logger.warn({ epoch: fence.epoch.toString(), shard: this.shard }, 'fenced out by a newer leader');
      this.elector.depose('fenced out');
    } else {
      this.logger.error({ err: error }, message);
    }
  }
}
