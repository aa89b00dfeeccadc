import { Injectable, Logger } from '@nestjs/common';
import { LeaderExecutionsRepository } from '@punctual/db';
import { ExecutionsQueue } from '@punctual/queue';

/** How long an execution may wait for its job before the relay checks the job exists. */
const STALE_AFTER_MS = 5_000;
const BATCH = 1_000;

/**
 * The leader's repair loop: Redis may lose its data and workers may die, Postgres stays right.
 * Reaps expired leases (next attempt or `dead`) and re-enqueues executions whose job vanished.
 * Both are fenced by the leader's epoch. It can never cause a second success: the worker's fenced
 * claim is the final guard.
 */
@Injectable()
export class RelayService {
  private readonly logger = new Logger(RelayService.name);

  constructor(
    private readonly executions: LeaderExecutionsRepository,
    private readonly queue: ExecutionsQueue,
  ) {}

  /** `now`: the cluster's clock (Postgres'). */
  async repair(epoch: bigint, now = new Date()): Promise<{ reaped: number; requeued: number }> {
    const reaped = await this.executions.reapExpiredLeases(BATCH, epoch);
    for (const execution of reaped) {
      if (execution.status === 'retrying') await this.queue.ensureJob(execution.id, execution.attempt + 1);
    }
    const waiting = await this.executions.listAwaitingJob(new Date(now.getTime() - STALE_AFTER_MS), BATCH, epoch);
    const attempts = waiting.map((e) => ({ executionId: e.id, attempt: e.status === 'queued' ? 1 : e.attempt + 1, found: e }));
    const missing = await this.queue.withoutJob(attempts);
    // A job ends (and is dropped) when its run ends: one missing now may have run since the rows
    // were read. Only the ones still waiting, read again, get their job back.
    const still = new Set(await this.executions.stillAwaitingJob(missing.map((m) => m.found), epoch));
    const requeued: string[] = [];
    for (const m of missing.filter((a) => still.has(a.executionId))) {
      await this.queue.addAgain(m.executionId, m.attempt);
      requeued.push(m.executionId);
    }
    await this.executions.markRequeued(requeued, epoch);
    if (reaped.length || requeued.length) this.logger.warn({ reaped: reaped.length, requeued: requeued.length }, 'relay repaired executions');
    return { reaped: reaped.length, requeued: requeued.length };
  }
}
