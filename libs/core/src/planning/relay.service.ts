import { Injectable, Logger } from '@nestjs/common';
import { ExecutionsRepository } from '@punctual/db';
import { ExecutionsQueue } from '@punctual/queue';

/** How long an execution may wait for its job before the relay checks the job exists. */
const STALE_AFTER_MS = 5_000;
const BATCH = 1_000;

/**
 * The leader's repair loop: Redis may lose its data and workers may die, Postgres stays right.
 * Reaps expired leases (next attempt or `dead`) and re-enqueues executions whose job vanished.
 * It can never cause a second success: the worker's fenced claim is the final guard.
 */
@Injectable()
export class RelayService {
  private readonly logger = new Logger(RelayService.name);

  constructor(
    private readonly executions: ExecutionsRepository,
    private readonly queue: ExecutionsQueue,
  ) {}

  async repair(now = new Date()): Promise<{ reaped: number; requeued: number }> {
    const reaped = await this.executions.reapExpiredLeases(BATCH);
    for (const execution of reaped) {
      if (execution.status === 'retrying') await this.queue.ensureJob(execution.id, execution.attempt + 1);
    }
    let requeued = 0;
    const waiting = await this.executions.listAwaitingJob(new Date(now.getTime() - STALE_AFTER_MS), BATCH);
    for (const execution of waiting) {
      const attempt = execution.status === 'queued' ? 1 : execution.attempt + 1;
      if (await this.queue.ensureJob(execution.id, attempt)) requeued += 1;
    }
    if (reaped.length || requeued) this.logger.warn({ reaped: reaped.length, requeued }, 'relay repaired executions');
    return { reaped: reaped.length, requeued };
  }
}
