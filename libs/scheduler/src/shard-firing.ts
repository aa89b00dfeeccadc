import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@nestjs/common';
import type { ClockService } from '@punctual/clock';
import type { ShardFence } from '@punctual/db';
import { splitQualifiedName } from '@punctual/contract';
import type { Metrics } from '@punctual/metrics';
import { FairRelease, isBacklog, OnTimeFirst, type Releasable } from '@punctual/planning';
import { type Fireable, FireTimer } from './fire-timer.js';
import type { ShardFiringServices } from './shard-services.js';

/** How often backlog runs are released (each time what the rate allowed since the last). */
export const RELEASE_INTERVAL_MS = 100;
/**
 * A release of backlog runs steps aside (see OnTimeFirst) for an on-time slot due within a release
 * interval ahead (plus the fire lead) or fired within this long; every third release goes whatever.
 */
const YIELD_BEHIND_MS = 30;
const YIELDS_IN_A_ROW = 2;
/** A slot parked at fire is parked this long after its `fire_at` by the cluster's clock (which this process knows to a few ms). */
const PARK_MARGIN_MS = 5;

/** What firing asks of the leadership it serves: the fence while leading (null once it is not), and whether the lock is still held. */
export interface Leading {
  fence(): ShardFence | null;
  isLeader(): boolean;
}

/**
 * A shard leader's firing (DESIGN §4 "Fire"): planned rows wait in a timer until their `fire_at`
 * (less the lead), then on-time slots are pushed at once, backlog runs (catch-ups, backfills)
 * released at the shard's share of `CATCHUP_RATE`, round-robin across namespaces — never in front
 * of an on-time slot — and an exclusive task's on-time slot behind its own backlog parked on its row.
 * Remembers what it pushed until the relay's grace has passed: firing writes nothing to a row, so a
 * sweep must not push it again.
 */
export class ShardFiring {
  private readonly timer: FireTimer<Fireable>;
  /** What this leader pushed (or parked), by id, with its `fire_at`. */
  private readonly pushed = new Map<string, number>();
  /** Backlog runs due and not pushed yet, by namespace and task. */
  private readonly backlog: FairRelease<Fireable & Releasable>;
  private readonly onTimeFirst: OnTimeFirst;
  /** The latest `fire_at` of an on-time slot pushed: the release steps aside for it. */
  private lastOnTimeAt = Number.NEGATIVE_INFINITY;
  private readonly labels: { shard: string };

  constructor(
    private readonly s: ShardFiringServices,
    private readonly leading: Leading,
    private readonly clock: Pick<ClockService, 'now'>,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    options: { shard: number; releasePerSecond: number },
  ) {
    this.labels = { shard: String(options.shard) };
    this.backlog = new FairRelease(options.releasePerSecond);
    this.onTimeFirst = new OnTimeFirst(RELEASE_INTERVAL_MS + s.config.fireLeadMs, YIELD_BEHIND_MS, YIELDS_IN_A_ROW);
    this.timer = new FireTimer(
      (due) => void this.fire(due), // never rejects: a failed push is logged, the sweep fires it again
      () => this.clock.now(),
      s.config.fireLeadMs,
    );
  }

  /** Takes rows into the timer; one it holds, pushed or keeps in the backlog is left out. */
  add(rows: Fireable[]): void {
    this.timer.add(rows.filter((e) => !this.handled(e.id)));
  }

  /** Pushed, parked or in the backlog here: not to be taken into the timer again. */
  handled(id: string): boolean {
    return this.pushed.has(id) || this.backlog.has(id);
  }

  /** In the backlog: the relay leaves such a row's missing job alone (it is not pushed yet on purpose). */
  inBacklog(id: string): boolean {
    return this.backlog.has(id);
  }

  /** Forgets the pushes of rows due more than `beforeMs` ago: the relay checks those. */
  forgetPushedBefore(beforeMs: number): void {
    for (const [id, fireAt] of this.pushed) if (fireAt < beforeMs) this.pushed.delete(id);
  }

  /** Leadership ended: nothing more fires, and nothing is remembered. */
  clear(): void {
    this.pushed.clear();
    this.timer.clear();
    this.backlog.clear();
    this.metrics.backlog(this.labels, 0);
  }

  /**
   * Due executions: on-time ones pushed now, backlog ones kept for their turn, and an exclusive
   * task's on-time slot behind its own backlog parked on its row — it could only wait for them, and
   * a job claimed only to park would cost its worker a claim, a read and a park at the very instant
   * other tasks' slots start.
   */
  async fire(due: Fireable[]): Promise<void> {
    if (!this.leads()) return;
    const laneOf = (e: Fireable) => ({
      namespace: e.namespace ?? splitQualifiedName(e.taskName ?? '').namespace,
      group: e.taskId ?? e.taskName ?? e.id,
    });
    // The backlog first: an on-time slot due with its own task's backlog is behind it.
    this.backlog.add(due.filter((e) => isBacklog(e.trigger)).map((e) => ({ ...e, ...laneOf(e) })));
    this.metrics.backlog(this.labels, this.backlog.size);
    const now: Fireable[] = [];
    const behind: Fireable[] = [];
    for (const e of due) {
      if (isBacklog(e.trigger)) continue;
      const { namespace, group } = laneOf(e);
      (e.exclusive === true && this.backlog.hasTask(namespace, group) ? behind : now).push(e);
    }
    // Pushed first: a push marks its on-time slots before its first await, so the release below
    // steps aside for them, and their jobs reach the queue before the backlog's.
    const pushing = now.length > 0 ? this.push(now) : undefined;
    if (due.length > now.length + behind.length) this.releaseBacklog();
    await pushing;
    if (behind.length > 0) await this.parkBehindBacklog(behind);
  }

  /** The backlog runs whose turn has come — unless on-time slots fire about now (see OnTimeFirst). */
  releaseBacklog(): void {
    if (this.leading.fence() === null || this.backlog.size === 0) return;
    const now = this.clock.now();
    if (this.onTimeFirst.yields(now, this.timer.nextFireAt(), this.lastOnTimeAt)) return;
    const released = this.backlog.take(now);
    this.metrics.backlog(this.labels, this.backlog.size);
    if (released.length > 0) void this.push(released); // never rejects: a failure is logged, the sweep fires them
  }

  /**
   * Parks the slots behind their task's backlog that may only wait (see `parkAtFire`); pushes the
   * others. Parked at their `fire_at`, not the lead before it: a slot not yet due would not be
   * handed its turn by an end that came before it is (it would wait for the relay). Not fenced: a
   * park is what any worker's claim of the slot may write.
   */
  private async parkBehindBacklog(slots: Fireable[]): Promise<void> {
    if (!this.leads()) return;
    // Handled, as a push is: a sweep meanwhile must not put them back into the timer.
    for (const e of slots) this.pushed.set(e.id, e.fireAt.getTime());
    const dueIn = slots.reduce((latest, e) => Math.max(latest, e.fireAt.getTime()), 0) - this.clock.now();
    if (dueIn > 0) await sleep(dueIn + PARK_MARGIN_MS);
    if (!this.leads()) return;
    let parked = new Set<string>();
    try {
      parked = await this.s.turns.parkAtFire(
        slots.map((e) => e.id),
        this.clock.now(),
      );
    } catch (error) {
      this.logger.warn({ err: error, count: slots.length }, 'could not park slots behind their backlog; pushing them');
    }
    this.metrics.parkedAtFire.inc(parked.size);
    const rest = slots.filter((e) => !parked.has(e.id));
    if (rest.length > 0) await this.push(rest);
  }

  private async push(due: Fireable[]): Promise<void> {
    const fence = this.leading.fence();
    if (fence === null || !this.leading.isLeader()) return;
    for (const e of due) {
      this.pushed.set(e.id, e.fireAt.getTime());
      if (!isBacklog(e.trigger)) this.lastOnTimeAt = Math.max(this.lastOnTimeAt, e.fireAt.getTime());
    }
    try {
      const stillLeading = () => this.leading.fence() === fence && this.leading.isLeader();
      const pushed = await this.s.dispatcher.push(due, { stillLeading, now: () => this.clock.now() });
      // Deposed on the way: what was not pushed is the successor's (it pushes every due row it finds).
      if (pushed.length < due.length) for (const e of due.slice(pushed.length)) this.pushed.delete(e.id);
    } catch (error) {
      for (const e of due) this.pushed.delete(e.id);
      this.logger.error({ err: error, count: due.length }, 'firing failed; the next sweep fires them again');
    }
  }

  private leads(): boolean {
    return this.leading.fence() !== null && this.leading.isLeader();
  }
}
