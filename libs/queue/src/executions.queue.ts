import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { bestEffort } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import { RedisService } from '@punctual/redis';
import { Queue } from 'bullmq';
import { EXECUTION_JOB_OPTIONS, EXECUTIONS_QUEUE, type ExecutionJobData, executionJobId } from './queue.constants.js';

/**
 * Producer side of the executions queue. Every job carries the active trace context (when tracing
 * is on), so the attempt that runs it joins the trace of whatever queued it.
 */
@Injectable()
export class ExecutionsQueue implements OnApplicationShutdown {
  readonly queue: Queue<ExecutionJobData>;

  constructor(redis: RedisService) {
    this.queue = new Queue<ExecutionJobData>(EXECUTIONS_QUEUE, {
      connection: redis.connect(),
      prefix: redis.prefix,
      defaultJobOptions: EXECUTION_JOB_OPTIONS,
    });
  }

  /**
   * Pushes executions as immediate jobs in one round trip; an id already queued is not added twice.
   * Each job carries its `fire_at`, which a worker that receives it early waits for, and the
   * instant it was released (`releasedAt`, the cluster's clock).
   */
  async enqueueNow(executions: { id: string; fireAt: Date }[], releasedAt: number): Promise<void> {
    if (executions.length === 0) return;
    const trace = tracing.current();
    await this.queue.addBulk(
      executions.map(({ id, fireAt }) => ({
        name: 'execution',
        data: { executionId: id, fireAt: fireAt.getTime(), releasedAt, trace },
        opts: { jobId: executionJobId(id) },
      })),
    );
  }

  /** Schedules a later attempt of an execution (a retry after backoff). */
  async enqueueAttempt(executionId: string, attempt: number, delayMs: number): Promise<void> {
    await this.queue.add('execution', { executionId, trace: tracing.current() }, { jobId: executionJobId(executionId, attempt), delay: Math.max(0, delayMs) });
  }

  /**
   * Makes sure the job of an execution's attempt is in the queue (after Redis lost data, or after
   * a job ended without its execution ending). Returns true when it had to add it again.
   */
  async ensureJob(executionId: string, attempt: number): Promise<boolean> {
    if ((await this.withoutJob([{ executionId, attempt }])).length === 0) return false;
    await this.addAgain(executionId, attempt);
    return true;
  }

  /**
   * Of these attempts, the ones with no job waiting, delayed or running (none at all, or one that
   * already ended). The states are asked for all at once, in one pipeline.
   */
  async withoutJob<T extends { executionId: string; attempt: number }>(attempts: T[]): Promise<T[]> {
    const states = await Promise.all(attempts.map((a) => this.queue.getJobState(executionJobId(a.executionId, a.attempt))));
    return attempts.filter((_, i) => ['unknown', 'completed', 'failed'].includes(states[i]!));
  }

  /**
   * Adds an attempt's job again, replacing one that already ended. A first attempt's job carries
   * the row's `fire_at` (a worker holds it until then: an edit may have moved it past the instant
   * of the job it replaces) and the instant of this release.
   */
  async addAgain(executionId: string, attempt: number, first?: { fireAt: Date; releasedAt: number }): Promise<void> {
    const jobId = executionJobId(executionId, attempt);
    await bestEffort(this.queue.remove(jobId), 'queue.remove-ended-job');
    const timing = first ? { fireAt: first.fireAt.getTime(), releasedAt: first.releasedAt } : {};
    await this.queue.add('execution', { executionId, ...timing, trace: tracing.current() }, { jobId });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
