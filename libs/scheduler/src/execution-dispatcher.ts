import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { LeaderExecutionsRepository } from '@punctual/db';
import { Metrics, tracing } from '@punctual/observability';
import { ExecutionsQueue } from '@punctual/queue';
import type { Fireable } from './fire-timer.js';

/** Jobs per `addBulk`: large enough to amortise the round trip, small enough to overlap with the next push. */
const CHUNK = 2_000;

/**
 * How long after its push a row is marked `queued`. Most jobs are claimed within it, and a claim
 * from `scheduled` records the release instant the job carries: the marking then writes nothing
 * (one row write fewer per run). What it still marks — jobs waiting for a worker — is what the
 * relay watches for lost jobs.
 */
export const MARK_QUEUED_AFTER_MS = 500;

export interface DispatchOptions {
  /** Asked before each chunk and before the marking: a deposed leader pushes and marks no more. */
  stillLeading?: () => boolean;
  /** The cluster's clock (Postgres'), against which lateness and the release instant are measured. */
  now?: () => number;
  /** Delay of the marking (default {@link MARK_QUEUED_AFTER_MS}). */
  markAfterMs?: number;
}

/**
 * Fires planned executions: pushes them to BullMQ as immediate jobs, each carrying the instant it
 * was released, then — a moment later — marks `queued` the rows no worker has claimed yet, as of
 * that instant (a marking delayed by a busy leader does not make a row look released late). Push
 * first: a row marked `queued` always has its job, and a job whose row is still `scheduled` is
 * claimable (the claim accepts `scheduled` and records the release itself). Until the marking the
 * leader keeps the ids as firing (its sweeps do not fire them again); a leader that dies before it
 * leaves them `scheduled`, and its successor pushes them again under the same job ids. The marking
 * is fenced by the leader's epoch.
 */
@Injectable()
export class ExecutionDispatcher {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly queue: ExecutionsQueue,
    private readonly executions: LeaderExecutionsRepository,
    private readonly metrics: Metrics,
  ) {}

  async dispatch(due: Fireable[], epoch: bigint, options: DispatchOptions = {}): Promise<void> {
    const { stillLeading = () => true, now = Date.now, markAfterMs = MARK_QUEUED_AFTER_MS } = options;
    const lead = this.config.fireLeadMs;
    const pushed: { ids: string[]; releasedAt: number }[] = [];
    for (let i = 0; i < due.length && stillLeading(); i += CHUNK) {
      const chunk = due.slice(i, i + CHUNK);
      const releasedAt = now();
      await tracing.withSpan('punctual.fire_chunk', { 'punctual.executions': chunk.length }, () => this.queue.enqueueNow(chunk, releasedAt), { follows: chunk });
      const queuedAt = now();
      this.metrics.fired.inc(chunk.length);
      // Lateness against the instant the push was meant for (fire_at − lead), not fire_at itself.
      for (const e of chunk) this.metrics.dispatchLag.observe(Math.max(0, queuedAt - (e.fireAt.getTime() - lead)) / 1000);
      pushed.push({ ids: chunk.map((e) => e.id), releasedAt });
    }
    if (pushed.length === 0) return;
    if (markAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, markAfterMs));
    if (!stillLeading()) return;
    for (const { ids, releasedAt } of pushed) await this.executions.markQueued(ids, epoch, releasedAt);
  }
}
