import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import type { Config } from '@punctual/config';
import type { ClockService } from '@punctual/clock';
import type { HandlerQueues } from '@punctual/cluster';
import {
  isLockTimeout,
  type LeaderExecutionsRepository,
  type NamespacesRepository,
  type SchedulerStateRepository,
  type ShardFence,
  type TurnsRepository,
} from '@punctual/db';
import { splitQualifiedName } from '@punctual/contract';
import type { Metrics } from '@punctual/metrics';
import { FairRelease, isBacklog, leaderKey, OnTimeFirst, type Releasable, resolveLateSlots } from '@punctual/planning';
import type { RedisService } from '@punctual/redis';
import { FencedOutError } from './errors.js';
import type { ExecutionDispatcher } from './execution-dispatcher.js';
import { type Fireable, FireTimer } from './fire-timer.js';
import { LeaderElector } from './leader-elector.js';
import type { PlannerService } from './planner.service.js';
import type { RelayService } from './relay.service.js';

/** Planned rows taken into the timer per sweep (adoption, relay, API announcements). */
const SWEEP_LIMIT = 100_000;
const LATE_LIMIT = 10_000;
const RELAY_INTERVAL_MS = 2_000;
/** How often held backlog runs are released (each time what the rate allowed since the last). */
const RELEASE_INTERVAL_MS = 100;
/**
 * A release of backlog runs steps aside (see OnTimeFirst) for an on-time slot due within a release
 * interval ahead (plus the fire lead) or fired within this long; every third release goes whatever.
 */
const YIELD_BEHIND_MS = 30;
/** A slot parked at fire is parked this long after its `fire_at` by the cluster's clock (which this process knows to a few ms). */
const PARK_MARGIN_MS = 5;
const YIELDS_IN_A_ROW = 2;
/** Shard 0's leader sets the queues' gauges (depth, runs waiting for a worker) every this many relay passes. */
const OBSERVE_EVERY = 3;
/** Namespaces with `punctual_namespace_quota_used` series: the ones nearest their quotas. */
const NAMESPACE_METRICS_TOP = 20;

/** Leadership: the shard's Redis lock, its epoch and history in Postgres. */
export interface ShardLockServices {
  redis: RedisService;
  state: SchedulerStateRepository;
  config: Pick<Config, 'instanceId' | 'leaderTtlMs'>;
}

/** Planning: the shard's due slots written ahead, every tick and when the API announces a change. */
export interface ShardPlanningServices {
  planner: PlannerService;
  config: Pick<Config, 'planTickMs'>;
}

/** Firing: planned rows pushed to their handlers' queues at their `fire_at` (or parked, when they may only wait). */
export interface ShardFiringServices {
  dispatcher: ExecutionDispatcher;
  turns: TurnsRepository;
  config: Pick<Config, 'fireLeadMs'>;
}

/** Upkeep: adoption and sweeps of planned rows, late slots by their misfire policy, the relay's repairs, the queues' gauges. */
export interface ShardUpkeepServices {
  executions: LeaderExecutionsRepository;
  relay: RelayService;
  handlerQueues: HandlerQueues;
  namespaces: NamespacesRepository;
  config: Pick<Config, 'relayGraceMs' | 'lookaheadMs' | 'catchupMax' | 'catchupRate'>;
}

/**
 * What a shard's leader needs, by part — each part only what it uses — and the clock and metrics
 * every part reads. One scheduler process gives the same services to each of its shards' leaders.
 */
export interface ShardServices {
  clock: ClockService;
  metrics: Metrics;
  lock: ShardLockServices;
  planning: ShardPlanningServices;
  firing: ShardFiringServices;
  upkeep: ShardUpkeepServices;
}

export interface ShardLeaderOptions {
  shard: number;
  shards: number;
  /** See `LeaderElectorOptions.mayAcquire`: the scheduler's share of shards decides. */
  mayAcquire?: () => (() => void) | null;
}

/**
 * One shard's leadership (DESIGN §4, per shard §11): campaigns for the shard's Redis lock; while
 * leading, plans the shard's due slots every tick (and at once when the API announces a change) and
 * fires its planned rows at their `fire_at` as immediate BullMQ jobs; adopts what a previous leader
 * left, repairs what Redis or a worker lost. On losing leadership it stops at once. Every write is
 * fenced by the shard's epoch and touches only the shard's tasks — but the park of a slot at its
 * fire, which only does what any worker's claim of it may do; every instant it decides by is
 * Postgres' (see {@link ClockService}).
 */
export class ShardLeader {
  readonly shard: number;
  private readonly logger: Logger;
  private readonly elector: LeaderElector;
  private readonly timer: FireTimer<Fireable>;
  private fence: ShardFence | null = null;
  private planTimer: NodeJS.Timeout | null = null;
  private relayTimer: NodeJS.Timeout | null = null;
  private repairing = false;
  /** Relay passes since this leader last set the queues' gauges. */
  private observed = 0;
  /**
   * What this leader pushed, by id, with its `fire_at`: firing writes nothing (see
   * ExecutionDispatcher), so a row stays `scheduled` until claimed and a sweep must not push it
   * again. Kept until the relay's grace has passed (the relay then checks the job exists).
   */
  private readonly pushed = new Map<string, number>();
  /**
   * Backlog runs (catch-ups, backfills) due and not pushed yet: released at this shard's share of
   * `CATCHUP_RATE`, round-robin across namespaces, so one namespace's day of missed slots never
   * stands in front of another's runs. On-time slots never wait here.
   */
  private readonly backlog: FairRelease<Fireable & Releasable>;
  private releaseTimer: NodeJS.Timeout | null = null;
  /** The latest `fire_at` of an on-time slot pushed, and the release's step aside for them. */
  private lastOnTimeAt = Number.NEGATIVE_INFINITY;
  private readonly onTimeFirst: OnTimeFirst;
  private planning: Promise<void> | null = null;
  private replanRequested = false;
  /** The sweep of rows the API inserted, one at a time: what the next one looks at (tasks, or all). */
  private sweeping: Promise<void> | null = null;
  private sweepAsked: Set<string> | 'all' | null = null;
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
    this.backlog = new FairRelease(Math.max(1, s.upkeep.config.catchupRate / options.shards));
    this.onTimeFirst = new OnTimeFirst(
      RELEASE_INTERVAL_MS + s.firing.config.fireLeadMs,
      YIELD_BEHIND_MS,
      YIELDS_IN_A_ROW,
    );
    this.timer = new FireTimer(
      (due) => void this.fire(due),
      () => this.s.clock.now(),
      s.firing.config.fireLeadMs,
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
  get holdsLock(): boolean {
    return this.elector.holdsLock;
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
    this.stopPlanning();
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
   * The API announced a change of tasks: plan at once, and put the rows it inserted for `inserted`
   * (`all`: any task) into the timer. Both coalesce: a burst of creates through the API costs a
   * few passes, not one per create, and a sweep looks at the named tasks' rows only.
   */
  onTasksChanged(inserted: string[] | 'all' = 'all'): void {
    this.requestPlan();
    if (inserted !== 'all' && inserted.length === 0) return;
    this.sweepAsked =
      inserted === 'all' || this.sweepAsked === 'all' ? 'all' : new Set([...(this.sweepAsked ?? []), ...inserted]);
    this.sweeping ??= (async () => {
      while (this.sweepAsked !== null && this.fence !== null) {
        const asked = this.sweepAsked;
        this.sweepAsked = null;
        await this.sweepScheduled({ tasks: asked === 'all' ? undefined : [...asked] });
      }
    })().finally(() => {
      this.sweeping = null;
      this.sweepAsked = null;
    });
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
      await this.resolveLate();
      // Everything planned and due is pushed again (a job already in the queue is not added twice),
      // whatever its age: the predecessor may have died before pushing it.
      await this.sweepScheduled({ adopting: true });
      if (this.fence !== fence) return;
      // The rows of this first plan that are not due yet go into the timer too.
      this.timer.add(planned);
      this.planTimer = setInterval(() => this.requestPlan(), this.s.planning.config.planTickMs);
      this.relayTimer = setInterval(() => void this.repair(), RELAY_INTERVAL_MS); // never rejects: it logs
      this.releaseTimer = setInterval(() => this.releaseBacklog(), RELEASE_INTERVAL_MS);
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
    this.stopPlanning();
  }

  private stopPlanning(): void {
    this.fence = null;
    this.pushed.clear();
    if (this.planTimer) clearInterval(this.planTimer);
    if (this.relayTimer) clearInterval(this.relayTimer);
    if (this.releaseTimer) clearInterval(this.releaseTimer);
    this.planTimer = null;
    this.relayTimer = null;
    this.releaseTimer = null;
    this.timer.clear();
    this.backlog.clear();
    this.s.metrics.backlogHeld.set(this.labels, 0);
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
      if (this.fence === fence) this.timer.add(planned);
    } catch (error) {
      this.onLeaderError(fence, error, 'planning failed; retrying next tick');
    }
  }

  /**
   * Due executions: on-time ones pushed now, backlog ones held for their turn (see {@link backlog}),
   * and an exclusive task's on-time slot behind its own held backlog parked on its row: it could
   * only wait for them, and a job claimed only to park would cost its worker a claim, a read and a
   * park at the very instant other tasks' slots start.
   */
  private async fire(due: Fireable[]): Promise<void> {
    if (this.fence === null || !this.isLeader) return;
    const laneOf = (e: Fireable) => ({
      namespace: e.namespace ?? splitQualifiedName(e.taskName ?? '').namespace,
      group: e.taskId ?? e.taskName ?? e.id,
    });
    // The backlog first: an on-time slot due with its own task's backlog is behind it.
    this.backlog.add(due.filter((e) => isBacklog(e.trigger)).map((e) => ({ ...e, ...laneOf(e) })));
    this.s.metrics.backlogHeld.set(this.labels, this.backlog.size);
    const now: Fireable[] = [];
    const behind: Fireable[] = [];
    for (const e of due) {
      if (isBacklog(e.trigger)) continue;
      const { namespace, group } = laneOf(e);
      (e.exclusive === true && this.backlog.holdsTask(namespace, group) ? behind : now).push(e);
    }
    // Pushed first: a push marks its on-time slots before its first await, so the release below
    // steps aside for them, and their jobs reach the queue before the backlog's.
    const pushing = now.length > 0 ? this.push(now) : undefined;
    if (due.length > now.length + behind.length) this.releaseBacklog();
    await pushing;
    if (behind.length > 0) await this.parkBehindBacklog(behind);
  }

  /**
   * Parks the slots behind their task's held backlog that may only wait (see `parkAtFire`); pushes
   * the others. Parked at their `fire_at`, not the lead before it: a slot not yet due would not be
   * handed its turn by an end that came before it is (it would wait for the relay). Not fenced: a
   * park is what any worker's claim of the slot may write.
   */
  private async parkBehindBacklog(slots: Fireable[]): Promise<void> {
    if (this.fence === null || !this.isLeader) return;
    // Handled, as a push is: a sweep meanwhile must not put them back into the timer.
    for (const e of slots) this.pushed.set(e.id, e.fireAt.getTime());
    const dueIn = slots.reduce((latest, e) => Math.max(latest, e.fireAt.getTime()), 0) - this.s.clock.now();
    if (dueIn > 0) await sleep(dueIn + PARK_MARGIN_MS);
    if (this.fence === null || !this.isLeader) return;
    let parked = new Set<string>();
    try {
      const ids = slots.map((e) => e.id);
      parked = await this.s.firing.turns.parkAtFire(ids, this.s.clock.now());
    } catch (error) {
      this.logger.warn({ err: error, count: slots.length }, 'could not park slots behind their backlog; pushing them');
    }
    this.s.metrics.parkedAtFire.inc(parked.size);
    const rest = slots.filter((e) => !parked.has(e.id));
    if (rest.length > 0) await this.push(rest);
  }

  /** The held backlog runs whose turn has come — unless on-time slots fire about now (see OnTimeFirst). */
  private releaseBacklog(): void {
    if (this.fence === null || this.backlog.size === 0) return;
    const now = this.s.clock.now();
    if (this.onTimeFirst.yields(now, this.timer.nextFireAt(), this.lastOnTimeAt)) return;
    const released = this.backlog.take(now);
    this.s.metrics.backlogHeld.set(this.labels, this.backlog.size);
    if (released.length > 0) void this.push(released); // never rejects: a failure is logged, the sweep fires them
  }

  private async push(due: Fireable[]): Promise<void> {
    const fence = this.fence;
    if (fence === null || !this.isLeader) return;
    for (const e of due) {
      this.pushed.set(e.id, e.fireAt.getTime());
      if (!isBacklog(e.trigger)) this.lastOnTimeAt = Math.max(this.lastOnTimeAt, e.fireAt.getTime());
    }
    try {
      const stillLeading = () => this.fence === fence && this.elector.isLeader;
      const pushed = await this.s.firing.dispatcher.dispatch(due, { stillLeading, now: () => this.s.clock.now() });
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
  private async sweepScheduled(options: { adopting?: boolean; tasks?: string[] } = {}): Promise<void> {
    const fence = this.fence;
    if (fence === null) return;
    const { config } = this.s.upkeep;
    try {
      const now = this.s.clock.now();
      for (const [id, fireAt] of this.pushed) if (fireAt < now - 2 * config.relayGraceMs) this.pushed.delete(id);
      let after: Date | { fireAt: Date; id: string } | null = options.adopting
        ? null
        : new Date(now - config.relayGraceMs);
      for (;;) {
        const due = await this.s.upkeep.executions.listScheduledDue(
          after,
          new Date(now + config.lookaheadMs),
          SWEEP_LIMIT,
          fence,
          options.tasks,
        );
        if (this.fence !== fence) return;
        this.timer.add(due.filter((e) => !this.pushed.has(e.id) && !this.backlog.has(e.id)));
        if (due.length < SWEEP_LIMIT) return;
        // By (fire_at, id): a page that ends among rows due at one instant goes on with the rest.
        after = due.at(-1)!;
      }
    } catch (error) {
      this.logger.error({ err: error }, 'sweep of planned executions failed');
    }
  }

  /** Late first attempts left by an outage follow their task's misfire policy (see `resolveLateSlots`). */
  private async resolveLate(): Promise<void> {
    const fence = this.fence;
    if (fence === null) return;
    try {
      const late = await this.s.upkeep.executions.listLateUnstarted(LATE_LIMIT, fence);
      if (late.length === 0) return;
      const decision = resolveLateSlots(late, this.s.clock.date(), this.s.upkeep.config.catchupMax);
      const { caughtUp, missed } = await this.s.upkeep.executions.resolveLate(fence, decision.catchup, decision.missed);
      this.s.metrics.missed.inc(missed);
      this.s.metrics.slotsDecided('missed', 'late', missed);
      // Written only as a whole (the leader's fence): every slot decided missed was recorded missed.
      if (missed === decision.missed.length) {
        const missedIds = new Set(decision.missed);
        for (const row of late)
          if (missedIds.has(row.id) && row.sloStartWithinMs !== null)
            this.s.metrics.observeTaskSlot(row.taskName, Infinity, row.sloStartWithinMs);
      }
      this.logger.warn({ catchup: caughtUp.length, missed }, 'late planned slots decided by their misfire policy');
      // Queued ones already have their job; planned ones are fired by the sweep that follows.
    } catch (error) {
      this.logger.error({ err: error }, 'could not decide late planned slots; retrying next interval');
    }
  }

  private async repair(): Promise<void> {
    const fence = this.fence;
    if (this.repairing || fence === null || !this.isLeader) return;
    this.repairing = true;
    try {
      if (!(await this.s.lock.state.heartbeat(fence))) throw new FencedOutError(fence.epoch);
      await this.resolveLate();
      await this.sweepScheduled();
      await this.s.upkeep.relay.repair(fence, this.s.clock.date(), undefined, (id) => this.backlog.has(id));
      if (this.shard === 0 && (this.observed += 1) % OBSERVE_EVERY === 1) {
        await this.s.upkeep.handlerQueues.observe(this.s.metrics);
        this.s.metrics.observeNamespaceQuotas(await this.s.upkeep.namespaces.nearestQuota(NAMESPACE_METRICS_TOP));
      }
    } catch (error) {
      this.onLeaderError(fence, error, 'relay failed; retrying next interval');
    } finally {
      this.repairing = false;
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
