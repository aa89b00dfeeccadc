import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { bestEffort } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import { RedisService } from '@punctual/redis';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EXECUTION_JOB_OPTIONS, EXECUTIONS_QUEUE, type ExecutionJobData, executionJobId, turnJobId } from './queue.constants.js';

/** A slot handed its turn (see TurnsRepository in @punctual/db): its job goes first. */
export interface TurnJob {
  id: string;
  taskId: string;
  status: 'scheduled' | 'queued' | 'retrying';
  attempt: number;
  handedMs: number;
}

/**
 * Producer side of the executions queue. Every job carries the active trace context (when tracing
 * is on), so the attempt that runs it joins the trace of whatever queued it.
 */
@Injectable()
export class ExecutionsQueue implements OnApplicationShutdown {
  readonly queue: Queue<ExecutionJobData>;
  /** The queue's own connection, also for the relay's reads of job hashes. */
  private readonly connection: Redis;

  constructor(redis: RedisService) {
    this.connection = redis.connect();
    this.queue = new Queue<ExecutionJobData>(EXECUTIONS_QUEUE, {
      connection: this.connection,
      prefix: redis.prefix,
      defaultJobOptions: EXECUTION_JOB_OPTIONS,
    });
  }

  /**
   * Pushes executions as immediate jobs in one round trip; an id already queued is not added twice.
   * Each job carries its `fire_at`, which a worker that receives it early waits for, and the
   * instant it was released (`releasedAt`, the cluster's clock).
   */
  async enqueueNow(executions: { id: string; fireAt: Date; taskId?: string }[], releasedAt: number): Promise<void> {
    if (executions.length === 0) return;
    const trace = tracing.current();
    await this.queue.addBulk(
      executions.map(({ id, fireAt, taskId }) => ({
        name: 'execution',
        data: { executionId: id, taskId, fireAt: fireAt.getTime(), releasedAt, trace },
        opts: { jobId: executionJobId(id) },
      })),
    );
  }

  /** Schedules a later attempt of an execution (a retry after backoff). */
  async enqueueAttempt(executionId: string, attempt: number, delayMs: number, taskId?: string): Promise<void> {
    await this.queue.add('execution', { executionId, taskId, trace: tracing.current() }, { jobId: executionJobId(executionId, attempt), delay: Math.max(0, delayMs) });
  }

  /**
   * Pushes the jobs of slots handed their turn, at the head of the queue (LIFO): the run ahead of
   * each just ended, and the slot goes next rather than behind a backlog — the task's later slots,
   * further back in the queue, then find it done instead of waiting behind it in turn.
   */
  async enqueueTurns(turns: TurnJob[]): Promise<void> {
    if (turns.length === 0) return;
    const trace = tracing.current();
    await this.queue.addBulk(
      turns.map((t) => {
        const attempt = t.status === 'retrying' ? t.attempt + 1 : 1;
        return { name: 'execution', data: { executionId: t.id, taskId: t.taskId, trace }, opts: { jobId: turnJobId(t.id, attempt, t.handedMs), lifo: true } };
      }),
    );
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
   * Of these attempts, the ones with no job waiting, delayed or running: none at all, or one that
   * already ended (a finished job keeps its hash only while retained, with `finishedOn` set). One
   * pipeline of constant-time reads of the jobs' own hashes — never BullMQ's `getState`, which
   * scans the wait list for each job (a cost that grows with the backlog the relay is checking).
   */
  async withoutJob<T extends { executionId: string; attempt: number }>(attempts: T[]): Promise<T[]> {
    if (attempts.length === 0) return [];
    const pipeline = this.connection.pipeline();
    for (const a of attempts) pipeline.hmget(this.queue.toKey(executionJobId(a.executionId, a.attempt)), 'timestamp', 'finishedOn');
    const answers = (await pipeline.exec()) ?? [];
    return attempts.filter((_, i) => {
      const [error, fields] = answers[i] ?? [new Error('no answer'), null];
      if (error) throw error;
      const [timestamp, finishedOn] = fields as [string | null, string | null];
      return timestamp === null || finishedOn !== null;
    });
  }

  /**
   * Adds an attempt's job again, replacing one that already ended. A first attempt's job carries
   * the row's `fire_at` (a worker holds it until then: an edit may have moved it past the instant
   * of the job it replaces) and the instant of this release.
   */
  async addAgain(executionId: string, attempt: number, first?: { fireAt: Date; releasedAt: number }, taskId?: string): Promise<void> {
    const jobId = executionJobId(executionId, attempt);
    await bestEffort(this.queue.remove(jobId), 'queue.remove-ended-job');
    const timing = first ? { fireAt: first.fireAt.getTime(), releasedAt: first.releasedAt } : {};
    await this.queue.add('execution', { executionId, taskId, ...timing, trace: tracing.current() }, { jobId });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
