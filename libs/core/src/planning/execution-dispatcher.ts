import { Injectable } from '@nestjs/common';
import { ExecutionsRepository } from '@punctual/db';
import { Metrics } from '@punctual/observability';
import { ExecutionsQueue } from '@punctual/queue';
import type { Fireable } from './fire-timer.js';

/** Jobs per `addBulk`: large enough to amortise the round trip, small enough to overlap with marking. */
const CHUNK = 2_000;

/**
 * Fires planned executions: pushes them to BullMQ as immediate jobs, then marks them `queued`.
 * Push first: a row marked `queued` always has its job, and a job whose row is still `scheduled`
 * is claimable (the claim accepts `scheduled`). A large batch goes in chunks, each chunk's marking
 * (Postgres) overlapping the next chunk's push (Redis).
 */
@Injectable()
export class ExecutionDispatcher {
  constructor(
    private readonly queue: ExecutionsQueue,
    private readonly executions: ExecutionsRepository,
    private readonly metrics: Metrics,
  ) {}

  async dispatch(due: Fireable[]): Promise<void> {
    const marking: Promise<unknown>[] = [];
    try {
      for (let i = 0; i < due.length; i += CHUNK) {
        const chunk = due.slice(i, i + CHUNK);
        await this.queue.enqueueNow(chunk);
        const queuedAt = Date.now();
        for (const e of chunk) this.metrics.dispatchLag.observe(Math.max(0, queuedAt - e.fireAt.getTime()) / 1000);
        marking.push(this.executions.markQueued(chunk.map((e) => e.id)));
      }
    } finally {
      // Every marking is awaited (none is left to reject unobserved); the first failure is thrown.
      const settled = await Promise.allSettled(marking);
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
    }
  }
}
