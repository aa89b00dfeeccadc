import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { ExecutionsRepository, Prisma, type SkipReason, type Task, type TaskExecution, TasksRepository } from '@punctual/db';
import { HandlerRegistry, type HandlerLog, UnrecoverableError } from '@punctual/handlers';
import { Metrics } from '@punctual/observability';
import { ExecutionsQueue } from '@punctual/queue';
import { retryDelayMs } from './backoff.js';

const MAX_RESULT_BYTES = 64 * 1024;

/**
 * Why a claimed execution must not run, or null. A deleted task or a paused one (unless the run
 * is manual) stops it; so does starting a first attempt after `fire_at + maxDelay` — catch-up,
 * manual and backfill runs are planned to run at `fire_at`, so they are late only if they wait.
 */
export function skipReasonAtClaim(execution: TaskExecution, task: Task | null, now: Date): SkipReason | null {
  if (!task) return 'task_deleted';
  if (task.status === 'paused' && execution.trigger !== 'manual') return 'paused';
  if (execution.attempt === 1 && now.getTime() > execution.fireAt.getTime() + task.maxDelayMs) return 'late';
  return null;
}

export type RunOutcome = 'succeeded' | 'retrying' | 'dead' | 'skipped' | 'lost' | 'stale';

export interface RunOptions {
  workerId: string;
  /** Reports progress to the queue (Bull Board shows it). */
  progress?: (value: number | object) => Promise<void>;
}

/**
 * One attempt of one execution: claim (fenced), check, run the handler, record the outcome fenced
 * by the attempt's `attempt_id`. A lost claim or a stale write is an outcome, not an error.
 */
@Injectable()
export class ExecutionRunner {
  private readonly logger = new Logger(ExecutionRunner.name);

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly executions: ExecutionsRepository,
    private readonly tasks: TasksRepository,
    private readonly handlers: HandlerRegistry,
    private readonly queue: ExecutionsQueue,
    private readonly metrics: Metrics,
  ) {}

  async runExecution(executionId: string, options: RunOptions): Promise<RunOutcome> {
    const attemptId = randomUUID();
    const claim = await this.executions.claim(executionId, attemptId, options.workerId, this.config.leaseMs);
    if (claim.kind === 'lost') return 'lost';
    if (claim.kind === 'overlap') {
      if (await this.executions.markSkipped(executionId, 'overlap', null)) this.metrics.skipped.inc({ reason: 'overlap' });
      return 'skipped';
    }
    const execution = claim.execution;
    if (execution.attempt === 1 && execution.startedAt) {
      this.metrics.startLag.observe(Math.max(0, execution.startedAt.getTime() - execution.fireAt.getTime()) / 1000);
    }
    const task = execution.taskId ? await this.tasks.findById(execution.taskId) : null;
    const fields = { executionId, task: execution.taskName, attempt: execution.attempt };
    const reason = skipReasonAtClaim(execution, task, execution.startedAt ?? new Date());
    if (reason || !task) {
      await this.executions.markSkipped(executionId, reason ?? 'task_deleted', attemptId);
      this.metrics.skipped.inc({ reason: reason ?? 'task_deleted' });
      this.logger.log({ ...fields, status: 'skipped', reason }, 'execution skipped');
      return 'skipped';
    }
    const handler = this.handlers.get(task.handler);
    this.logger.log({ ...fields, status: 'running' }, 'execution started');
    try {
      if (!handler) throw new UnrecoverableError(`no handler named "${task.handler}" is registered on this worker`);
      const signal = AbortSignal.timeout(task.timeoutMs);
      const stopTimer = this.metrics.handlerDuration.startTimer({ handler: task.handler });
      const result = await handler.run({
        execution,
        task,
        payload: execution.payload ?? task.payload,
        attempt: execution.attempt,
        signal,
        log: this.handlerLog(fields),
        progress: options.progress ?? (async () => undefined),
      });
      stopTimer();
      return await this.recordSuccess(execution, task, attemptId, result, fields);
    } catch (error) {
      return this.recordFailure(execution, task, attemptId, error, fields);
    }
  }

  private async recordSuccess(execution: TaskExecution, task: Task, attemptId: string, result: unknown, fields: object): Promise<RunOutcome> {
    const json = result === undefined ? null : (JSON.parse(JSON.stringify(result)) as Prisma.InputJsonValue | null);
    const stored = json !== null && Buffer.byteLength(JSON.stringify(json)) > MAX_RESULT_BYTES ? { truncated: true } : json;
    const ok = await this.executions.markSucceeded(execution.id, attemptId, stored);
    if (ok) this.metrics.executions.inc({ status: 'succeeded', handler: task.handler });
    this.logger.log({ ...fields, status: ok ? 'succeeded' : 'stale' }, ok ? 'execution succeeded' : 'stale attempt; result dropped');
    return ok ? 'succeeded' : 'stale';
  }

  private async recordFailure(execution: TaskExecution, task: Task, attemptId: string, error: unknown, fields: object): Promise<RunOutcome> {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const unrecoverable = error instanceof Error && error.name === 'UnrecoverableError';
    const retry = !unrecoverable && execution.attempt < task.maxAttempts;
    const delay = retry ? retryDelayMs(execution.attempt, task.backoffMs, task.backoffMaxMs) : 0;
    const ok = await this.executions.markFailed(execution.id, attemptId, message.slice(0, 4000), retry ? new Date(Date.now() + delay) : null);
    if (!ok) return 'stale';
    this.metrics.executions.inc({ status: retry ? 'retrying' : 'dead', handler: task.handler });
    if (retry) await this.queue.enqueueAttempt(execution.id, execution.attempt + 1, delay);
    this.logger.warn({ ...fields, status: retry ? 'retrying' : 'dead', error: message }, 'execution failed');
    return retry ? 'retrying' : 'dead';
  }

  private handlerLog(fields: object): HandlerLog {
    return {
      info: (message, extra) => this.logger.log({ ...fields, ...extra }, message),
      warn: (message, extra) => this.logger.warn({ ...fields, ...extra }, message),
      error: (message, extra) => this.logger.error({ ...fields, ...extra }, message),
    };
  }
}
