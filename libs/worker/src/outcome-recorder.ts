import type { Logger } from '@nestjs/common';
import type { ClockService } from '@punctual/clock';
import { RESULT_MAX_BYTES } from '@punctual/contract';
import { type AttemptsRepository, type Db, isConnectionError, type OutboxRepository, type Prisma, type PrismaService, type Task, type TaskExecution } from '@punctual/db';
import { bestEffort, type Metrics } from '@punctual/metrics';
import type { ExecutionsQueue } from '@punctual/queue';
import { tracing } from '@punctual/tracing';
import { AttemptAbortedError } from './attempt-control.js';
import { Batcher } from './batcher.js';
import { BATCH, BATCHES_IN_FLIGHT } from './claim-batches.js';
import type { RunOutcome } from './disposition.js';
import { judgeFailure } from './failure-judgement.js';
import { notificationFor, type NotifyEvent } from './notifications.js';
import type { TurnHandover } from './turn-handover.js';

/** Tries at writing an outcome while Postgres is unreachable: about five seconds in all. */
const RECORD_TRIES = 6;
const RECORD_RETRY_MS = 250;

/** Successes recorded together (see {@link Batcher}). */
interface Success {
  id: string;
  attemptId: string;
  result: Prisma.InputJsonValue | null;
}

/** What the recorder writes through. */
export interface OutcomeRecorderDeps {
  prisma: PrismaService;
  attempts: AttemptsRepository;
  outbox: OutboxRepository;
  queue: ExecutionsQueue;
  handover: TurnHandover;
  clock: ClockService;
  metrics: Metrics;
  logger: Logger;
}

/**
 * Writes what became of an attempt that ran (DESIGN §5 "Finish"): a success (plain ones batched
 * across concurrent runs), or a failure as `judgeFailure` decides it — a retry with its job, the
 * dead letter, an attempt handed back at shutdown — each fenced by `attempt_id`, with its outbox
 * notification in the same transaction, and the hand-over of the task's turn to the slot parked
 * behind it.
 */
export class OutcomeRecorder {
  /** Concurrent jobs record plain successes together, and the turns they hand on are pushed together. */
  private readonly successes = new Batcher(
    (items: Success[]) => this.recordSuccesses(items),
    async (item: Success) => (await this.recordSuccesses([item]))[0]!,
    BATCH,
    BATCHES_IN_FLIGHT,
  );
  private readonly prisma: PrismaService;
  private readonly attempts: AttemptsRepository;
  private readonly outbox: OutboxRepository;
  private readonly queue: ExecutionsQueue;
  private readonly handover: TurnHandover;
  private readonly clock: ClockService;
  private readonly metrics: Metrics;
  private readonly logger: Logger;

  constructor(deps: OutcomeRecorderDeps) {
    ({ prisma: this.prisma, attempts: this.attempts, outbox: this.outbox, queue: this.queue, handover: this.handover, clock: this.clock, metrics: this.metrics, logger: this.logger } = deps);
  }

  /**
   * Writes an attempt's outcome, again while the write fails for want of a connection (a session
   * killed, Postgres restarting): every write is fenced by `attempt_id`, so one that committed
   * before its connection died makes the next one `stale`, not a second outcome. Past the last try
   * the error stands: the lease runs out and another attempt takes the execution over.
   */
  async record(write: () => Promise<RunOutcome>, fields: object): Promise<RunOutcome> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await tracing.withSpan('punctual.record', {}, write);
      } catch (error) {
        if (!isConnectionError(error) || attempt >= RECORD_TRIES) throw error;
        this.logger.warn({ ...fields, err: error, try: attempt }, 'could not record the outcome; trying again');
        await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS * attempt));
      }
    }
  }

  /** Records successes in one statement; the turns their ends hand on are pushed meanwhile (see TurnHandover). */
  private async recordSuccesses(items: Success[]): Promise<boolean[]> {
    const recorded = await this.attempts.succeed(items);
    void this.handover.afterEnds(recorded.handed, recorded.waited);
    return recorded.current;
  }

  async recordSuccess(execution: TaskExecution, task: Task, attemptId: string, result: unknown, fields: object): Promise<RunOutcome> {
    const json = result === undefined ? null : (JSON.parse(JSON.stringify(result)) as Prisma.InputJsonValue | null);
    const stored = json !== null && Buffer.byteLength(JSON.stringify(json)) > RESULT_MAX_BYTES ? { truncated: true } : json;
    const success = { id: execution.id, attemptId, result: stored };
    const ok = await this.withNotification(
      task,
      execution,
      'succeeded',
      undefined,
      async (db) => {
        const recorded = await this.attempts.succeed([success], db);
        return { ok: recorded.current[0]!, after: () => this.handover.afterEnds(recorded.handed, recorded.waited) };
      },
      () => this.successes.run(success),
    );
    if (ok) this.metrics.executions.inc({ status: 'succeeded', handler: task.handler });
    this.logger.log({ ...fields, status: ok ? 'succeeded' : 'stale' }, ok ? 'execution succeeded' : 'stale attempt; result dropped');
    return ok ? 'succeeded' : 'stale';
  }

  async recordFailure(execution: TaskExecution, task: Task, attemptId: string, error: unknown, fields: object): Promise<RunOutcome> {
    const cause = error instanceof AttemptAbortedError ? error.reason : null;
    const verdict = judgeFailure({
      cause,
      unrecoverable: error instanceof Error && error.name === 'UnrecoverableError',
      attempt: execution.attempt,
      maxAttempts: task.maxAttempts,
      backoffMs: task.backoffMs,
      backoffMaxMs: task.backoffMaxMs,
    });
    switch (verdict.kind) {
      case 'cancelled':
      case 'stale':
        // Cancelled or superseded: someone else already decided this execution's state.
        this.logger.warn({ ...fields, reason: cause }, 'attempt aborted');
        return verdict.kind;
      case 'release': {
        const released = await this.attempts.releaseAttempt(execution.id, attemptId, 'worker shut down mid-run');
        if (released) await bestEffort(this.queue.enqueueAttempt(execution.id, execution.attempt + 1, 0, execution.taskId ?? undefined), 'worker.requeue-at-shutdown');
        this.logger.warn({ ...fields, status: 'retrying' }, 'attempt handed back at shutdown');
        return released ? 'released' : 'stale';
      }
      case 'retry':
      case 'dead':
        break;
    }
    const retry = verdict.kind === 'retry';
    const delay = retry ? verdict.delayMs : 0;
    const message = cause === 'timeout' ? `timed out after ${task.timeoutMs} ms` : describe(error);
    const ok = await this.withNotification(task, execution, retry ? 'failed' : 'dead', message, async (db) => ({
      ok: await this.attempts.markFailed(execution.id, attemptId, message.slice(0, 4000), retry ? new Date(this.clock.now() + delay) : null, db),
    }));
    if (!ok) return 'stale';
    this.metrics.executions.inc({ status: retry ? 'retrying' : 'dead', handler: task.handler });
    if (retry) await this.queue.enqueueAttempt(execution.id, execution.attempt + 1, delay, execution.taskId ?? undefined);
    // A dead run no longer holds its task: a slot parked behind it gets its turn.
    else if (execution.exclusive && execution.taskId) await this.handover.handOverAndPush([execution.taskId]);
    this.logger.warn({ ...fields, status: retry ? 'retrying' : 'dead', error: message }, 'execution failed');
    return retry ? 'retrying' : 'dead';
  }

  /**
   * Runs a fenced write, adding its outbox row in the same transaction when the task asks for one;
   * without a notification, `alone` does the write (a success shares a statement with others).
   */
  private async withNotification(
    task: Task,
    execution: TaskExecution,
    event: NotifyEvent,
    error: string | undefined,
    write: (db: Db) => Promise<{ ok: boolean; after?: () => Promise<void> }>,
    alone?: () => Promise<boolean>,
  ): Promise<boolean> {
    const message = notificationFor(task, execution, event, error);
    if (!message && alone) return alone();
    const written = message
      ? await this.prisma.$transaction(async (tx) => {
          const result = await write(tx);
          // A stale attempt changes nothing and emits nothing.
          if (result.ok) await this.outbox.add(message.topic, message.payload, tx);
          return result;
        })
      : await write(this.prisma);
    // What follows the commit (the turn handed on): only once the write is there to be seen.
    if (written.after) void written.after();
    return written.ok;
  }

}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
