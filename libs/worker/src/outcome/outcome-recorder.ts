import { Injectable, Logger } from '@nestjs/common';
import { ClockService } from '@punctual/clock';
import { RESULT_MAX_BYTES, storableJson, storablePrefix } from '@punctual/contract';
import {
  AttemptsRepository,
  type Db,
  isConnectionError,
  OutboxRepository,
  type Prisma,
  PrismaService,
  type Task,
  type TaskExecution,
  TaskHealthRepository,
} from '@punctual/db';
import { bestEffort, Metrics } from '@punctual/metrics';
import { ExecutionsQueue } from '@punctual/queue';
import { formatDuration } from '@punctual/contract';
import { tracing } from '@punctual/tracing';
import { AttemptAbortedError } from '../run/attempt-control.js';
import { Batcher } from '../batcher.js';
import { BATCH, BATCHES_IN_FLIGHT } from '../claim/claim-batches.js';
import type { RunOutcome } from '../claim/disposition.js';
import { judgeFailure } from './failure-judgement.js';
import { notificationFor, type NotifyEvent } from './notifications.js';
import { TurnHandover } from '../claim/turn-handover.js';

/** The timeline's reason for a run that needs no other explanation, by how it came about. */
const TRIGGER_REASONS: Record<TaskExecution['trigger'], string | null> = {
  schedule: null,
  catchup: 'catch_up',
  manual: 'manual',
  backfill: 'backfill',
};

/**
 * Waits between tries at writing an outcome while Postgres is unreachable: growing from the first
 * to the last, then steady. The tries go on while the attempt may still own its execution.
 */
const RECORD_RETRY_MS = 250;
const RECORD_RETRY_MAX_MS = 2_000;
/** An attempt's error is kept to this many characters. */
const ERROR_MAX_CHARS = 4_000;

/** Successes recorded together (see {@link Batcher}). */
interface Success {
  id: string;
  attemptId: string;
  result: Prisma.InputJsonValue | null;
}

/**
 * Writes what became of an attempt that ran (DESIGN §5 "Finish"): a success (plain ones batched
 * across concurrent runs), or a failure as `judgeFailure` decides it — a retry with its job, the
 * dead letter, an attempt handed back at shutdown — each fenced by `attempt_id`, with its outbox
 * notification in the same transaction, and the hand-over of the task's turn to the slot parked
 * behind it.
 */
@Injectable()
export class OutcomeRecorder {
  /** Concurrent jobs record plain successes together, and the turns they hand on are pushed together. */
  private readonly successes = new Batcher(
    (items: Success[]) => this.recordSuccesses(items),
    async (item: Success) => (await this.recordSuccesses([item]))[0]!,
    BATCH,
    BATCHES_IN_FLIGHT,
  );
  private readonly logger = new Logger(OutcomeRecorder.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly attempts: AttemptsRepository,
    private readonly outbox: OutboxRepository,
    private readonly health: TaskHealthRepository,
    private readonly queue: ExecutionsQueue,
    private readonly handover: TurnHandover,
    private readonly clock: ClockService,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Writes an attempt's outcome, again and again while the write fails for want of a connection (a
   * session killed, Postgres restarting or failing over, the network down): an outcome given up on
   * would leave the row `running`, and once its lease ran out the reaper would run a handler that
   * already ran once more. The tries go on while the attempt may still own its execution — the
   * lease keeper keeps renewing its lease meanwhile, and `disowned` says when Postgres answered that
   * the execution is no longer this attempt's (taken over, cancelled): then the outcome is `stale`.
   * Every write is fenced by `attempt_id`, so one that committed before its connection died makes
   * the next one `stale`, not a second outcome.
   */
  async record(
    write: () => Promise<RunOutcome>,
    fields: object,
    disowned: () => boolean = () => false,
  ): Promise<RunOutcome> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await tracing.withSpan('punctual.record', {}, write);
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        if (disowned()) {
          this.logger.warn(
            { ...fields, err: error },
            "could not record the outcome, and the execution is no longer this attempt's; outcome dropped",
          );
          return 'stale';
        }
        this.logger.warn({ ...fields, err: error, try: attempt }, 'could not record the outcome; trying again');
        await new Promise((resolve) => setTimeout(resolve, Math.min(RECORD_RETRY_MAX_MS, RECORD_RETRY_MS * attempt)));
      }
    }
  }

  /** Records successes in one statement; the turns their ends hand on are pushed meanwhile (see TurnHandover). */
  private async recordSuccesses(items: Success[]): Promise<boolean[]> {
    const recorded = await this.attempts.succeed(items);
    void this.handover.afterEnds(recorded.handed, recorded.waited); // never rejects: the relay does what fails
    return recorded.current;
  }

  async recordSuccess(
    execution: TaskExecution,
    task: Task,
    attemptId: string,
    result: unknown,
    fields: object,
  ): Promise<RunOutcome> {
    // What Postgres can store: a NUL or half a character in a result would fail the write itself.
    const json =
      result === undefined ? null : storableJson(JSON.parse(JSON.stringify(result)) as Prisma.InputJsonValue | null);
    const stored =
      json !== null && Buffer.byteLength(JSON.stringify(json)) > RESULT_MAX_BYTES ? { truncated: true } : json;
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
    if (ok) {
      this.metrics.executions.inc({ status: 'succeeded', handler: task.handler });
      this.metrics.slotsDecided('succeeded', execution.attempt > 1 ? 'retried' : TRIGGER_REASONS[execution.trigger]);
    }
    this.logger.log(
      { ...fields, status: ok ? 'succeeded' : 'stale' },
      ok ? 'execution succeeded' : 'stale attempt; result dropped',
    );
    return ok ? 'succeeded' : 'stale';
  }

  async recordFailure(
    execution: TaskExecution,
    task: Task,
    attemptId: string,
    error: unknown,
    fields: object,
  ): Promise<RunOutcome> {
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
        if (released)
          await bestEffort(
            this.queue.pushAttempt(task.handler, execution.id, execution.attempt + 1, 0, execution.taskId ?? undefined),
            'worker.requeue-at-shutdown',
          );
        this.logger.warn({ ...fields, status: 'retrying' }, 'attempt handed back at shutdown');
        return released ? 'released' : 'stale';
      }
      case 'retry':
      case 'dead':
        break;
    }
    const retry = verdict.kind === 'retry';
    const delay = retry ? verdict.delayMs : 0;
    // Stored as Postgres can (a 5xx body may hold a NUL; a cut may halve a character).
    const message = storablePrefix(
      cause === 'timeout' ? `timed out after ${task.timeoutMs} ms` : describe(error),
      ERROR_MAX_CHARS,
    );
    const ok = await this.withNotification(task, execution, retry ? 'failed' : 'dead', message, async (db) => ({
      ok: await this.attempts.markFailed(
        execution.id,
        attemptId,
        message,
        retry ? new Date(this.clock.now() + delay) : null,
        db,
      ),
    }));
    if (!ok) return 'stale';
    this.metrics.executions.inc({ status: retry ? 'retrying' : 'dead', handler: task.handler });
    if (!retry) {
      this.metrics.slotsDecided('failed', execution.attempt > 1 ? 'retried' : 'handler_error');
      if (task.pauseAfterFailures !== null && task.pauseAfterWithinMs !== null)
        await bestEffort(this.tripBreaker(task, execution, message), 'worker.breaker');
    }
    if (retry)
      await this.queue.pushAttempt(
        task.handler,
        execution.id,
        execution.attempt + 1,
        delay,
        execution.taskId ?? undefined,
      );
    // A dead run no longer holds its task: a slot parked behind it gets its turn.
    else if (execution.exclusive && execution.taskId) await this.handover.handOverAndPush([execution.taskId]);
    this.logger.warn({ ...fields, status: retry ? 'retrying' : 'dead', error: message }, 'execution failed');
    return retry ? 'retrying' : 'dead';
  }

  /**
   * The failure breaker (`policy.pauseAfter`), after a slot ended dead: pauses the task once enough
   * of its slots did within the window, says why in its pause note, and tells its notify URL.
   */
  private async tripBreaker(task: Task, execution: TaskExecution, error: string): Promise<void> {
    const within = formatDuration(task.pauseAfterWithinMs!);
    const note = `paused by the failure breaker: ${task.pauseAfterFailures} slot(s) ended dead within ${within} (policy.pauseAfter); the last: ${error.slice(0, 200)}`;
    const paused = await this.health.tripBreaker(task.id, task.pauseAfterFailures!, task.pauseAfterWithinMs!, note);
    if (!paused) return;
    this.logger.warn(
      { task: task.name, executionId: execution.id, failures: task.pauseAfterFailures, within },
      'task paused by its failure breaker',
    );
    if (task.notifyUrl) {
      await this.outbox.add(
        'task.paused',
        {
          url: task.notifyUrl,
          taskId: task.id,
          event: 'paused',
          execution: {
            id: execution.id,
            task: task.name,
            scheduledFor: execution.scheduledFor.toISOString(),
            status: 'dead',
            error,
            note,
          },
        },
        this.prisma,
      );
    }
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
    if (written.after) void written.after(); // a hand-over: never rejects (see TurnHandover)
    return written.ok;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
