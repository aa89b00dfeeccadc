import type { Logger } from '@nestjs/common';
import type { ClockService } from '@punctual/clock';
import type { ShardFence } from '@punctual/db';
import type { Metrics } from '@punctual/metrics';
import { resolveLateSlots } from '@punctual/planning';
import { FencedOutError } from './errors.js';
import type { Leading, ShardFiring } from './shard-firing.js';
import type { ShardLockServices, ShardUpkeepServices } from './shard-services.js';

/** Planned rows taken into the timer per sweep (adoption, relay, API announcements). */
const SWEEP_LIMIT = 100_000;
const LATE_LIMIT = 10_000;
/** Shard 0's leader sets the queues' gauges (depth, runs waiting for a worker) every this many relay passes. */
const OBSERVE_EVERY = 3;
/** Namespaces with `punctual_namespace_quota_used` series: the ones nearest their quotas. */
const NAMESPACE_METRICS_TOP = 20;

/**
 * A shard leader's upkeep (DESIGN §4 "Relay"): sweeps planned rows into the firing's timer —
 * everything due when adopting a previous leader's rows, the rows the API inserted when it
 * announces them, the recent ones on each relay pass — decides late first attempts by their
 * misfire policy, and every pass proves the lead (a heartbeat of its epoch), runs the relay's
 * repairs and, on shard 0, sets the queues' gauges.
 */
export class ShardUpkeep {
  private repairing = false;
  /** Relay passes since this leader last set the queues' gauges. */
  private observed = 0;
  /** The sweep of rows the API inserted, one at a time: what the next one looks at (tasks, or all). */
  private sweeping: Promise<void> | null = null;
  private sweepAsked: Set<string> | 'all' | null = null;

  constructor(
    private readonly s: ShardUpkeepServices,
    private readonly lock: Pick<ShardLockServices, 'state'>,
    private readonly firing: ShardFiring,
    private readonly leading: Leading,
    /** A pass failed: fenced out by a newer leader (it steps down), or otherwise (it logs). */
    private readonly onError: (fence: ShardFence, error: unknown, message: string) => void,
    private readonly clock: Pick<ClockService, 'now' | 'date'>,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    private readonly shard: number,
  ) {}

  /**
   * Sweeps the rows the API inserted for `tasks` (`all`: any task) into the timer. Coalesced: one
   * sweep at a time, and the next looks at every task named meanwhile.
   */
  sweepInserted(tasks: string[] | 'all'): void {
    if (tasks !== 'all' && tasks.length === 0) return;
    this.sweepAsked =
      tasks === 'all' || this.sweepAsked === 'all' ? 'all' : new Set([...(this.sweepAsked ?? []), ...tasks]);
    this.sweeping ??= (async () => {
      while (this.sweepAsked !== null && this.leading.fence() !== null) {
        const asked = this.sweepAsked;
        this.sweepAsked = null;
        await this.sweepScheduled({ tasks: asked === 'all' ? undefined : [...asked] });
      }
    })().finally(() => {
      this.sweeping = null;
      this.sweepAsked = null;
    });
  }

  /**
   * Takes `scheduled` rows due within the lookahead into the timer, leaving out those the firing
   * handled already. A row older than the relay's grace is the relay's to check — except when
   * adopting what a previous leader left: then every due row goes, page after page.
   */
  async sweepScheduled(options: { adopting?: boolean; tasks?: string[] } = {}): Promise<void> {
    const fence = this.leading.fence();
    if (fence === null) return;
    const { config } = this.s;
    try {
      const now = this.clock.now();
      this.firing.forgetPushedBefore(now - 2 * config.relayGraceMs);
      let after: Date | { fireAt: Date; id: string } | null = options.adopting
        ? null
        : new Date(now - config.relayGraceMs);
      for (;;) {
        const due = await this.s.executions.listScheduledDue(
          after,
          new Date(now + config.lookaheadMs),
          SWEEP_LIMIT,
          fence,
          options.tasks,
        );
        if (this.leading.fence() !== fence) return;
        this.firing.add(due);
        if (due.length < SWEEP_LIMIT) return;
        // By (fire_at, id): a page that ends among rows due at one instant goes on with the rest.
        after = due.at(-1)!;
      }
    } catch (error) {
      this.logger.error({ err: error }, 'sweep of planned executions failed');
    }
  }

  /** Late first attempts left by an outage follow their task's misfire policy (see `resolveLateSlots`). */
  async resolveLate(): Promise<void> {
    const fence = this.leading.fence();
    if (fence === null) return;
    try {
      const late = await this.s.executions.listLateUnstarted(LATE_LIMIT, fence);
      if (late.length === 0) return;
      const decision = resolveLateSlots(late, this.clock.date(), this.s.config.catchupMax);
      const { caughtUp, missed } = await this.s.executions.resolveLate(fence, decision.catchup, decision.missed);
      this.metrics.missed.inc(missed);
      this.metrics.slotsDecided('missed', 'late', missed);
      // Written only as a whole (the leader's fence): every slot decided missed was recorded missed.
      if (missed === decision.missed.length) {
        const missedIds = new Set(decision.missed);
        for (const row of late)
          if (missedIds.has(row.id) && row.sloStartWithinMs !== null)
            this.metrics.observeTaskSlot(row.taskName, Infinity, row.sloStartWithinMs);
      }
      this.logger.warn({ catchup: caughtUp.length, missed }, 'late planned slots decided by their misfire policy');
      // Queued ones already have their job; planned ones are fired by the sweep that follows.
    } catch (error) {
      this.logger.error({ err: error }, 'could not decide late planned slots; retrying next interval');
    }
  }

  /** One relay pass: the lead proved, late slots decided, a sweep, the relay's repairs, the gauges. Never rejects. */
  async repair(): Promise<void> {
    const fence = this.leading.fence();
    if (this.repairing || fence === null || !this.leading.isLeader()) return;
    this.repairing = true;
    try {
      if (!(await this.lock.state.heartbeat(fence))) throw new FencedOutError(fence.epoch);
      await this.resolveLate();
      await this.sweepScheduled();
      await this.s.relay.repair(fence, this.clock.date(), undefined, (id) => this.firing.inBacklog(id));
      if (this.shard === 0 && (this.observed += 1) % OBSERVE_EVERY === 1) {
        await this.s.handlerQueues.observe(this.metrics);
        this.metrics.observeNamespaceQuotas(await this.s.namespaces.nearestQuota(NAMESPACE_METRICS_TOP));
      }
    } catch (error) {
      this.onError(fence, error, 'relay failed; retrying next interval');
    } finally {
      this.repairing = false;
    }
  }
}
