import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { LeaderExecutionsRepository } from '@punctual/db';
import { Metrics, tracing } from '@punctual/observability';
import { ExecutionsQueue } from '@punctual/queue';
import type { Fireable } from './fire-timer.js';

/** Jobs per `addBulk`: large enough to amortise the round trip, small enough to overlap with marking. */
const CHUNK = 2_000;

/**
 * Fires planned executions: pushes them to BullMQ as immediate jobs, then marks them `queued`.
 * Push first: a row marked `queued` always has its job, and a job whose row is still `scheduled`
 * is claimable (the claim accepts `scheduled`). A large batch goes in chunks, each chunk's marking
 * (Postgres) overlapping the next chunk's push (Redis). The marking is fenced by the leader's
 * epoch, and a leader deposed mid-way pushes no further chunk.
 */
@Injectable()
export class ExecutionDispatcher {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly queue: ExecutionsQueue,
    private readonly executions: LeaderExecutionsRepository,
    private readonly metrics: Metrics,
  ) {}

  /**
   * `stillLeading` is asked before each chunk; `now` is the cluster's clock (Postgres'), against
   * which lateness is measured.
   */
  async dispatch(due: Fireable[], epoch: bigint, stillLeading: () => boolean = () => true, now: () => number = Date.now): Promise<void> {
    const lead = this.config.fireLeadMs;
    let markingFailed: unknown = null;
    const marking: Promise<unknown>[] = [];
    try {
      for (let i = 0; i < due.length && stillLeading(); i += CHUNK) {
        const chunk = due.slice(i, i + CHUNK);
        await tracing.withSpan('punctual.fire_chunk', { 'punctual.executions': chunk.length }, () => this.queue.enqueueNow(chunk), { follows: chunk });
        const queuedAt = now();
        this.metrics.fired.inc(chunk.length);
        // Lateness against the instant the push was meant for (fire_at − lead), not fire_at itself.
        for (const e of chunk) this.metrics.dispatchLag.observe(Math.max(0, queuedAt - (e.fireAt.getTime() - lead)) / 1000);
        // Observed at once: a failed marking must not reject unhandled while the next chunk is pushed.
        marking.push(this.executions.markQueued(chunk.map((e) => e.id), epoch).catch((error: unknown) => (markingFailed ??= error)));
      }
    } finally {
      await Promise.all(marking);
    }
    if (markingFailed) throw markingFailed;
  }
}
