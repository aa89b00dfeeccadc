import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { ClockService } from '@punctual/clock';
import { isLockTimeout, LeaderExecutionsRepository, SchedulerStateRepository } from '@punctual/db';
import { Metrics } from '@punctual/observability';
import { resolveLateSlots } from '@punctual/planning';
import { ExecutionsQueue, TASKS_CHANGED_CHANNEL } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import type { Redis } from 'ioredis';
import { FencedOutError } from './errors.js';
import { ExecutionDispatcher } from './execution-dispatcher.js';
import { type Fireable, FireTimer } from './fire-timer.js';
import { LeaderElector } from './leader-elector.js';
import { PlannerService } from './planner.service.js';
import { RelayService } from './relay.service.js';

/** Planned rows taken into the timer per sweep (adoption, relay, API announcements). */
const SWEEP_LIMIT = 100_000;
const LATE_LIMIT = 10_000;
const RELAY_INTERVAL_MS = 2_000;

/**
 * The scheduler role: campaigns for leadership; while leading, plans due slots every tick (and at
 * once when the API announces a change) and fires planned rows at their `fire_at` as immediate
 * BullMQ jobs. On losing leadership it stops planning and firing at once. Every write it makes is
 * fenced by its epoch; every instant it decides by is Postgres' (see {@link ClockService}).
 */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SchedulerService.name);
  private readonly elector: LeaderElector;
  private readonly timer: FireTimer<Fireable>;
  private subscriber: Redis | null = null;
  private epoch: bigint | null = null;
  private planTimer: NodeJS.Timeout | null = null;
  private relayTimer: NodeJS.Timeout | null = null;
  private repairing = false;
  /**
   * What this leader pushed, by id, with its `fire_at`: firing writes nothing (see
   * ExecutionDispatcher), so a row stays `scheduled` until claimed and a sweep must not push it
   * again. Kept until the relay's grace has passed (the relay then checks the job exists).
   */
  private readonly pushed = new Map<string, number>();
  private planning: Promise<void> | null = null;
  private replanRequested = false;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly planner: PlannerService,
    private readonly executions: LeaderExecutionsRepository,
    private readonly state: SchedulerStateRepository,
    private readonly queue: ExecutionsQueue,
    private readonly relay: RelayService,
    private readonly dispatcher: ExecutionDispatcher,
    private readonly clock: ClockService,
    private readonly metrics: Metrics,
  ) {
    this.elector = new LeaderElector(redis.client, {
      key: redis.key('scheduler', 'leader'),
      instanceId: config.instanceId,
      ttlMs: config.leaderTtlMs,
      onElected: () => void this.lead(),
      onDeposed: (reason) => this.follow(reason),
    });
    this.timer = new FireTimer((due) => void this.fire(due), () => this.clock.now(), config.fireLeadMs);
  }

  get isLeader(): boolean {
    return this.elector.isLeader && this.epoch !== null;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber = this.redis.connect();
    await this.subscriber.subscribe(this.redis.key(TASKS_CHANGED_CHANNEL));
    this.subscriber.on('message', () => {
      this.requestPlan();
      void this.sweepScheduled();
    });
    this.elector.start();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopPlanning();
    await this.planning?.catch(() => undefined);
    await this.elector.stop();
    await this.subscriber?.quit().catch(() => undefined);
  }

  private async lead(): Promise<void> {
    try {
      const epoch = await this.takeEpoch();
      if (epoch === null || !this.elector.isLeader) return;
      this.epoch = epoch;
      this.logger.log({ epoch: epoch.toString(), instance: this.config.instanceId }, 'became leader');
      this.metrics.leader.set({ shard: '0' }, 1);
      this.metrics.leaderChanges.inc({ change: 'elected' });
      await this.clock.measure();
      // Adopt what the previous leader left. Plan first, firing nothing yet: the late slots at the
      // cursors and the late rows it planned but never fired then share one misfire decision (no
      // catch-up run has started that the decision would have to take back). Then everything due
      // goes into the timer (what is due now fires at once).
      const planned = await this.planner.planDueSlots(epoch, () => this.clock.date()).catch((error: unknown) => {
        this.onLeaderError(epoch, error, 'planning failed');
        return [];
      });
      await this.resolveLate();
      // Everything planned and due is pushed again (a job already in the queue is not added twice),
      // whatever its age: the predecessor may have died before pushing it.
      await this.sweepScheduled({ adopting: true });
      // The rows of this first plan that are not due yet go into the timer too.
      if (this.epoch === epoch) this.timer.add(planned);
      this.planTimer = setInterval(() => this.requestPlan(), this.config.planTickMs);
      this.relayTimer = setInterval(() => void this.repair(), RELAY_INTERVAL_MS);
      this.requestPlan();
    } catch (error) {
      this.logger.error({ err: error }, 'could not take the epoch; stepping down');
      this.elector.depose('epoch not taken');
    }
  }

  /**
   * Bumps the epoch, trying again while this instance holds the lock: a frozen predecessor's open
   * transaction makes the bump wait (`lock_timeout`) until Postgres ends that session
   * (`idle_in_transaction_session_timeout`, below the lease). Null when leadership was lost meanwhile.
   */
  private async takeEpoch(): Promise<bigint | null> {
    for (;;) {
      try {
        return await this.state.bumpEpoch(this.config.instanceId);
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
        this.logger.warn('the previous leader still holds the epoch; waiting for Postgres to end its session');
        if (!this.elector.isLeader) return null;
      }
    }
  }

  private follow(reason: string): void {
    if (this.epoch !== null) {
      this.logger.warn({ epoch: this.epoch.toString(), reason }, 'stepped down');
      this.metrics.leaderChanges.inc({ change: 'deposed' });
    }
    this.metrics.leader.set({ shard: '0' }, 0);
    this.stopPlanning();
  }

  private stopPlanning(): void {
    this.epoch = null;
    this.pushed.clear();
    if (this.planTimer) clearInterval(this.planTimer);
    if (this.relayTimer) clearInterval(this.relayTimer);
    this.planTimer = null;
    this.relayTimer = null;
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
      const planned = await this.planner.planDueSlots(epoch, () => this.clock.date());
      if (this.epoch === epoch) this.timer.add(planned);
    } catch (error) {
      this.onLeaderError(epoch, error, 'planning failed; retrying next tick');
    }
  }

  private async fire(due: Fireable[]): Promise<void> {
    const epoch = this.epoch;
    if (epoch === null || !this.isLeader) return;
    for (const e of due) this.pushed.set(e.id, e.fireAt.getTime());
    try {
      const pushed = await this.dispatcher.dispatch(due, { stillLeading: () => this.epoch === epoch && this.elector.isLeader, now: () => this.clock.now() });
      // Deposed on the way: what was not pushed is the successor's (it pushes every due row it finds).
      if (pushed.length < due.length) for (const e of due.slice(pushed.length)) this.pushed.delete(e.id);
    } catch (error) {
      for (const e of due) this.pushed.delete(e.id);
      this.logger.error({ err: error, count: due.length }, 'firing failed; the next sweep fires them again');
    }
  }

  /**
   * Takes `scheduled` rows due within the lookahead into the timer, leaving out those this leader
   * pushed already (the timer ignores the ids it holds). A row older than the relay's grace is the
   * relay's to check — except when adopting what a previous leader left: then every due row goes,
   * page after page.
   */
  private async sweepScheduled(options: { adopting?: boolean } = {}): Promise<void> {
    const epoch = this.epoch;
    if (epoch === null) return;
    try {
      const now = this.clock.now();
      for (const [id, fireAt] of this.pushed) if (fireAt < now - 2 * this.config.relayGraceMs) this.pushed.delete(id);
      let after = options.adopting ? null : new Date(now - this.config.relayGraceMs);
      for (;;) {
        const due = await this.executions.listScheduledDue(after, new Date(now + this.config.lookaheadMs), SWEEP_LIMIT, epoch);
        if (this.epoch !== epoch) return;
        this.timer.add(due.filter((e) => !this.pushed.has(e.id)));
        if (due.length < SWEEP_LIMIT) return;
        after = due.at(-1)!.fireAt;
      }
    } catch (error) {
      this.logger.error({ err: error }, 'sweep of planned executions failed');
    }
  }

  /** Late first attempts left by an outage follow their task's misfire policy (see `resolveLateSlots`). */
  private async resolveLate(): Promise<void> {
    const epoch = this.epoch;
    if (epoch === null) return;
    try {
      const late = await this.executions.listLateUnstarted(LATE_LIMIT, epoch);
      if (late.length === 0) return;
      const decision = resolveLateSlots(late, this.clock.date(), this.config.catchupMax);
      const { caughtUp, missed } = await this.executions.resolveLate(epoch, decision.catchup, decision.missed);
      this.metrics.missed.inc(missed);
      this.logger.warn({ catchup: caughtUp.length, missed }, 'late planned slots decided by their misfire policy');
      // Queued ones already have their job; planned ones are fired by the sweep that follows.
    } catch (error) {
      this.logger.error({ err: error }, 'could not decide late planned slots; retrying next interval');
    }
  }

  private async repair(): Promise<void> {
    const epoch = this.epoch;
    if (this.repairing || epoch === null || !this.isLeader) return;
    this.repairing = true;
    try {
      if (!(await this.state.heartbeat(epoch))) throw new FencedOutError(epoch);
      await this.resolveLate();
      await this.sweepScheduled();
      await this.relay.repair(epoch, this.clock.date());
      const counts = await this.queue.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
      for (const [state, count] of Object.entries(counts)) this.metrics.queueDepth.set({ state }, count);
    } catch (error) {
      this.onLeaderError(epoch, error, 'relay failed; retrying next interval');
    } finally {
      this.repairing = false;
    }
  }

  private onLeaderError(epoch: bigint, error: unknown, message: string): void {
    if (error instanceof FencedOutError) {
      this.logger.warn({ epoch: epoch.toString() }, 'fenced out by a newer leader');
      this.elector.depose('fenced out');
    } else {
      this.logger.error({ err: error }, message);
    }
  }
}
