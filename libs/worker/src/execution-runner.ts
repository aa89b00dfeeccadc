import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { RESULT_MAX_BYTES } from '@punctual/contract';
import { AttemptsRepository, type Db, isConnectionError, OutboxRepository, Prisma, PrismaService, type Task, type TaskExecution } from '@punctual/db';
import { type HandlerLog, HandlerRegistry, handlerTaskOf, hmacSigner, UnrecoverableError } from '@punctual/handlers';
import { bestEffort, Metrics } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import { ExecutionsQueue } from '@punctual/queue';
import { ClockService } from '@punctual/clock';
import { AttemptAbortedError, AttemptControl } from './attempt-control.js';
import { retryDelayMs } from './backoff.js';
import { Batcher } from './batcher.js';
import { holdBeforeSlotMs } from './claim-checks.js';
import { BATCH, BATCHES_IN_FLIGHT, type EarlyRead, ExecutionClaimer } from './execution-claimer.js';
import { HandlerSlots } from './handler-slots.js';
import { LeaseKeeper } from './lease-keeper.js';
import { notificationFor, type NotifyEvent } from './notifications.js';

/** Tries at writing an outcome while Postgres is unreachable: about five seconds in all. */
const RECORD_TRIES = 6;
const RECORD_RETRY_MS = 250;
/** How long a cancel heard for an execution not (yet) running here is remembered: its claim may be on its way. */
const CANCEL_MEMORY_MS = 60_000;

/**
 * How an attempt ended here. `waiting` (not its turn yet), `early` (before its `fire_at`) and
 * `late` (the leader's misfire policy is to decide it): the job comes back, after `retryInMs` when
 * that is known (see {@link RunOptions.onComeBack}).
 */
export type RunOutcome = 'succeeded' | 'retrying' | 'dead' | 'skipped' | 'cancelled' | 'released' | 'lost' | 'stale' | 'waiting' | 'early' | 'late';

export interface RunOptions {
  workerId: string;
  /** The slot's `fire_at` (epoch ms) when the job was pushed ahead of it: the attempt starts no earlier. */
  fireAt?: number;
  /** When the leader released the job (epoch ms, the cluster's clock), if it says: see the claim. */
  releasedAt?: number;
  /** Reports progress to the queue (Bull Board shows it). */
  progress?: (value: number | object) => Promise<void>;
  /**
   * Told, for a job that must come back, after how long (undefined: the caller's own backoff) and
   * what it waits for: its task's turn, a flow-control key (with its place: `fire_at`), or nothing.
   */
  onComeBack?: (retryInMs: number | undefined, waitsFor: WaitsFor | null) => void;
}

/** What a job sent back waits for: a run of its task to end, or a flow-control key to move. */
export type WaitsFor = { taskId: string } | { flowKey: string; order: string };

/**
 * One attempt of one execution: claim (fenced, under the task's overlap policy), check, run the
 * handler under an AttemptControl, record the outcome fenced by `attempt_id` — with its outbox
 * notification in the same transaction. A lost claim or a stale write is an outcome, not an error.
 * Every instant it judges by is Postgres' (the claim's `now()`, or {@link ClockService}).
 */
@Injectable()
export class ExecutionRunner implements OnModuleDestroy {
  private readonly logger = new Logger(ExecutionRunner.name);
  private readonly active = new Map<string, AttemptControl>();
  /** Cancels heard for executions not running here, by id, until when they are remembered. */
  private readonly cancelled = new Map<string, number>();
  private readonly leases: LeaseKeeper;
  private readonly slots: HandlerSlots;
  private handingBack = false;
  /** Concurrent jobs record plain successes together (see {@link Batcher}). */
  private readonly successes = new Batcher(
    (items: { id: string; attemptId: string; result: Prisma.InputJsonValue | null }[]) => this.attempts.markSucceededMany(items),
    (item) => this.attempts.markSucceeded(item.id, item.attemptId, item.result),
    BATCH,
    BATCHES_IN_FLIGHT,
  );
  private readonly turnListeners: ((taskId: string) => void)[] = [];
  private readonly permitListeners: ((key: string) => void)[] = [];

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly prisma: PrismaService,
    private readonly attempts: AttemptsRepository,
    private readonly outbox: OutboxRepository,
    private readonly handlers: HandlerRegistry,
    private readonly queue: ExecutionsQueue,
    private readonly claimer: ExecutionClaimer,
    private readonly clock: ClockService,
    private readonly metrics: Metrics,
  ) {
    metrics.trackWorkerLoad(config.instanceId, config.workerConcurrency, () => this.running);
    this.leases = new LeaseKeeper(attempts, config.leaseMs, (error) => this.logger.warn({ err: error }, 'could not renew or check leases; attempts abort before their lease ends'));
    this.leases.start();
    this.slots = new HandlerSlots(config.workerConcurrency);
  }

  onModuleDestroy(): void {
    this.leases.stop();
  }

  /** Called with the task id whenever an exclusive attempt ends here: the task's next slot may go. */
  onTurnFreed(listener: (taskId: string) => void): void {
    this.turnListeners.push(listener);
  }

  /** Called with the concurrency key whenever an attempt that held one of its permits ends here. */
  onPermitFreed(listener: (key: string) => void): void {
    this.permitListeners.push(listener);
  }

  /**
   * Aborts the attempt running `executionId` here (cancel, replace). A cancel may be heard while
   * the execution's claim is still on its way: it is remembered for a while, and an attempt that
   * starts meanwhile is aborted at once.
   */
  abortExecution(executionId: string, cause: 'cancelled' | 'shutdown'): void {
    const control = this.active.get(executionId);
    if (control) return control.abort(cause);
    const now = performance.now();
    for (const [id, until] of this.cancelled) if (until < now) this.cancelled.delete(id);
    this.cancelled.set(executionId, now + CANCEL_MEMORY_MS);
  }

  /**
   * Aborts every running attempt: they are handed back for another worker (shutdown). A job still
   * held before its slot, or arriving later, is not claimed at all: the relay re-enqueues it.
   */
  abortAll(): void {
    this.handingBack = true;
    for (const control of this.active.values()) control.abort('shutdown');
  }

  get running(): number {
    return this.active.size;
  }

  async runExecution(executionId: string, options: RunOptions): Promise<RunOutcome> {
    // A timer may fire a little early (it counts from the loop's cached time): wait until the instant itself.
    const until = Date.now() + holdBeforeSlotMs(options.fireAt, this.clock.now(), this.config.fireLeadMs);
    // Held before its slot: the claim's read is made meanwhile, so one round trip is left after the instant.
    const early = until > Date.now() ? this.claimer.readEarly(executionId) : undefined;
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, until - Date.now()));
    if (this.handingBack) return 'released';
    // A handler slot is held from the claim to the end of the handler; the outcome is written after.
    const release = await this.slots.acquire();
    try {
      return await this.claimAndRun(executionId, options, release, early);
    } finally {
      release();
    }
  }

  private async claimAndRun(executionId: string, options: RunOptions, releaseSlot: () => void, early?: Promise<EarlyRead | null>): Promise<RunOutcome> {
    if (this.handingBack) return 'released';
    const attemptId = randomUUID();
    const claim = await tracing.withSpan('punctual.claim', {}, () =>
      this.claimer.claim({ id: executionId, attemptId, workerId: options.workerId, releasedAt: options.releasedAt }, early),
    );
    switch (claim.kind) {
      case 'wait':
        options.onComeBack?.(claim.retryInMs, claim.flow ? { flowKey: claim.flow.key, order: claim.flow.order } : claim.taskId ? { taskId: claim.taskId } : null);
        return 'waiting';
      case 'early':
        options.onComeBack?.(claim.retryInMs, null);
        return 'early';
      case 'late':
        return 'late';
      case 'lost':
      case 'skipped':
        return claim.kind;
    }
    const { execution, task } = claim;
    tracing.annotate({ 'punctual.task': execution.taskName, 'punctual.attempt': execution.attempt });
    try {
      return await this.runClaimed(execution, task, attemptId, claim.leaseValidUntil, options, releaseSlot);
    } finally {
      if (execution.exclusive && execution.taskId) for (const listener of this.turnListeners) listener(execution.taskId);
      if (task.concurrencyKey !== null) for (const listener of this.permitListeners) listener(task.concurrencyKey);
    }
  }

  private async runClaimed(
    execution: TaskExecution,
    task: Task,
    attemptId: string,
    leaseValidUntil: number,
    options: RunOptions,
    releaseSlot: () => void,
  ): Promise<RunOutcome> {
    if (execution.attempt === 1 && execution.startedAt) {
      const lagMs = execution.startedAt.getTime() - execution.fireAt.getTime();
      this.metrics.startLag.observe(Math.max(0, lagMs) / 1000);
      // A slot of the schedule (a catch-up run stands for late ones); manual runs and backfills have no slo.
      if (task.sloStartWithinMs !== null && (execution.trigger === 'schedule' || execution.trigger === 'catchup')) {
        this.metrics.observeTaskSlot(task.name, execution.trigger === 'catchup' ? Infinity : lagMs, task.sloStartWithinMs);
      }
    }
    const fields = { executionId: execution.id, task: execution.taskName, attempt: execution.attempt };
    const control = new AttemptControl(execution.id, attemptId, this.config.leaseMs, task.timeoutMs, leaseValidUntil);
    this.active.set(execution.id, control);
    this.leases.track(control);
    if (this.cancelled.delete(execution.id)) control.abort('cancelled');
    this.logger.log({ ...fields, status: 'running' }, 'execution started');
    const stopTimer = this.metrics.handlerDuration.startTimer({ handler: task.handler });
    try {
      let result: unknown;
      try {
        const handler = this.handlers.get(task.handler);
        // The claim sends a run to a worker that offers its handler; here none did when it was claimed.
        if (!handler) throw new UnrecoverableError(`no live worker offers a handler named "${task.handler}"`);
        const run = tracing.withSpan('punctual.handler', { 'punctual.handler': task.handler }, () => handler.run({
          execution,
          task: handlerTaskOf(task),
          sign: hmacSigner(task.secret),
          payload: execution.payload ?? task.payload,
          attempt: execution.attempt,
          signal: control.signal,
          log: this.handlerLog(fields),
          progress: options.progress ?? (async () => undefined),
        }));
        // A handler that ignores its signal cannot hold the attempt past an abort.
        result = await Promise.race([run, control.aborted]);
      } catch (error) {
        releaseSlot();
        return await this.record(() => this.recordFailure(execution, task, attemptId, error, fields), fields);
      }
      releaseSlot();
      // Only the handler's own errors are failures: a success that cannot be written is not retried
      // as a failure (that would run the handler again), it is written again.
      return await this.record(() => this.recordSuccess(execution, task, attemptId, result, fields), fields);
    } finally {
      stopTimer();
      control.finish();
      this.leases.untrack(control);
      this.active.delete(execution.id);
    }
  }

  /**
   * Writes an attempt's outcome, again while the write fails for want of a connection (a session
   * killed, Postgres restarting): every write is fenced by `attempt_id`, so one that committed
   * before its connection died makes the next one `stale`, not a second outcome. Past the last try
   * the error stands: the lease runs out and another attempt takes the execution over.
   */
  private async record(write: () => Promise<RunOutcome>, fields: object): Promise<RunOutcome> {
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

  private async recordSuccess(execution: TaskExecution, task: Task, attemptId: string, result: unknown, fields: object): Promise<RunOutcome> {
    const json = result === undefined ? null : (JSON.parse(JSON.stringify(result)) as Prisma.InputJsonValue | null);
    const stored = json !== null && Buffer.byteLength(JSON.stringify(json)) > RESULT_MAX_BYTES ? { truncated: true } : json;
    const ok = await this.withNotification(
      task,
      execution,
      'succeeded',
      undefined,
      (db) => this.attempts.markSucceeded(execution.id, attemptId, stored, db),
      () => this.successes.run({ id: execution.id, attemptId, result: stored }),
    );
    if (ok) this.metrics.executions.inc({ status: 'succeeded', handler: task.handler });
    this.logger.log({ ...fields, status: ok ? 'succeeded' : 'stale' }, ok ? 'execution succeeded' : 'stale attempt; result dropped');
    return ok ? 'succeeded' : 'stale';
  }

  private async recordFailure(execution: TaskExecution, task: Task, attemptId: string, error: unknown, fields: object): Promise<RunOutcome> {
    const cause = error instanceof AttemptAbortedError ? error.reason : null;
    // Cancelled or superseded: someone else already decided this execution's state.
    if (cause === 'cancelled' || cause === 'lease_lost') {
      this.logger.warn({ ...fields, reason: cause }, 'attempt aborted');
      return cause === 'cancelled' ? 'cancelled' : 'stale';
    }
    if (cause === 'shutdown') {
      const released = await this.attempts.releaseAttempt(execution.id, attemptId, 'worker shut down mid-run');
      if (released) await bestEffort(this.queue.enqueueAttempt(execution.id, execution.attempt + 1, 0), 'worker.requeue-at-shutdown');
      this.logger.warn({ ...fields, status: 'retrying' }, 'attempt handed back at shutdown');
      return released ? 'released' : 'stale';
    }
    const message = cause === 'timeout' ? `timed out after ${task.timeoutMs} ms` : describe(error);
    const unrecoverable = error instanceof Error && error.name === 'UnrecoverableError';
    const retry = !unrecoverable && execution.attempt < task.maxAttempts;
    const delay = retry ? retryDelayMs(execution.attempt, task.backoffMs, task.backoffMaxMs) : 0;
    const ok = await this.withNotification(task, execution, retry ? 'failed' : 'dead', message, (db) =>
      this.attempts.markFailed(execution.id, attemptId, message.slice(0, 4000), retry ? new Date(this.clock.now() + delay) : null, db),
    );
    if (!ok) return 'stale';
    this.metrics.executions.inc({ status: retry ? 'retrying' : 'dead', handler: task.handler });
    if (retry) await this.queue.enqueueAttempt(execution.id, execution.attempt + 1, delay);
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
    write: (db: Db) => Promise<boolean>,
    alone: () => Promise<boolean> = () => write(this.prisma),
  ): Promise<boolean> {
    const message = notificationFor(task, execution, event, error);
    if (!message) return alone();
    return this.prisma.$transaction(async (tx) => {
      const ok = await write(tx);
      // A stale attempt changes nothing and emits nothing.
      if (ok) await this.outbox.add(message.topic, message.payload, tx);
      return ok;
    });
  }

  private handlerLog(fields: object): HandlerLog {
    return {
      info: (message, extra) => this.logger.log({ ...fields, ...extra }, message),
      warn: (message, extra) => this.logger.warn({ ...fields, ...extra }, message),
      error: (message, extra) => this.logger.error({ ...fields, ...extra }, message),
    };
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
