import { Injectable } from '@nestjs/common';
import { ExecutionsRepository, type TaskExecution } from '@punctual/db';
import { Metrics } from '@punctual/observability';
import { ExecutionsQueue } from '@punctual/queue';

/**
 * Fires planned executions: pushes them to BullMQ as immediate jobs in one round trip, then marks
 * them `queued` in one statement. Push first: a row marked `queued` always has its job, and a job
 * whose row is still `scheduled` is claimable (the claim accepts `scheduled`).
 */
@Injectable()
export class ExecutionDispatcher {
  constructor(
    private readonly queue: ExecutionsQueue,
    private readonly executions: ExecutionsRepository,
    private readonly metrics: Metrics,
  ) {}

  async dispatch(due: TaskExecution[]): Promise<void> {
    const ids = due.map((e) => e.id);
    await this.queue.enqueueNow(due);
    const queuedAt = Date.now();
    for (const e of due) this.metrics.dispatchLag.observe(Math.max(0, queuedAt - e.fireAt.getTime()) / 1000);
    await this.executions.markQueued(ids);
  }
}
