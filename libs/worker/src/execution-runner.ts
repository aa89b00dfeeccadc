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
import { Batcher } from './batcher.js';
import { BATCH, BATCHES_IN_FLIGHT } from './claim-batches.js';
import { holdBeforeSlotMs } from './claim-checks.js';
import type { Disposition, RunOutcome } from './disposition.js';
import { ExecutionClaimer } from './execution-claimer.js';
import { judgeFailure } from './failure-judgement.js';
import { leasePolicy, type LeasePolicy } from './lease-policy.js';
import { HandlerSlots } from './handler-slots.js';
import { LeaseKeeper } from './lease-keeper.js';
import { notificationFor, type NotifyEvent } from './notifications.js';

/** Tries at writing an outcome while Postgres is unreachable: about five seconds in all. */
const RECORD_TRIES = 6;
const RECORD_RETRY_MS = 250;
/** How long a cancel heard for an execution not (yet) running here is remembered: its claim may be on its way. */
const CANCEL_MEMORY_MS = 60_000;
/**
 * How long an attempt waits for the handler of the same task's run claimed before it on this worker
 * to end (see takeLocalTurn): long enough for a short handler, short enough that a long one only
 * delays the slot's judgement by this much (the wait holds a job the worker took ahead, never a
 * handler slot).
 */
const LOCAL_TURN_WAIT_MS = 50;

export interface RunOptions {
  workerId: string;
  /** Reports progress to the queue (Bull Board shows it). */
  progress?: (value: number | object) => Promise<void>;
}

/** What a job says of its execution (see ExecutionJobData). */
export interface RunRequest {
  executionId: string;
  taskId?: string;
  /** The slot's `fire_at` (epoch ms) when the job was pushed ahead of it: the attempt starts no earlier. */
  fireAt?: number;
  /** When the leader released the job (epoch ms, the cluster's clock), if it says: see the claim. */
  releasedAt?: number;
}

/** An attempt's place in this worker's order of a task's attempts (see ExecutionRunner.takeLocalTurn). */
interface LocalTurn {
  claimed: () => void;
  handled: () => void;
  settle: () => void;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Successes recorded together (see {@link Batcher}). */
interface Success {
  id: string;
  attemptId: string;
  result: Prisma.InputJsonValue | null;
}

/**
 * One attempt of one execution: claim (see ExecutionClaimer), run the handler under an
 * AttemptControl, record the outcome fenced by `attempt_id` — with its outbox notification in the
 * same transaction, and the hand-over of its task's turn to the next slot parked behind it. A lost
 * claim or a stale write is an outcome, not an error. Every instant it judges by is Postgres'
 * (the claim's `now()`, or {@link ClockService}).
 */
@Injectable()
export class ExecutionRunner implements OnModuleDestroy {
  private readonly logger = new Logger(ExecutionRunner.name);
  private readonly active = new Map<string, AttemptControl>();
  /** Cancels heard for executions not running here, by id, until when they are remembered. */
  private readonly cancelled = new Map<string, number>();
  private readonly lease: LeasePolicy;
  private readonly leases: LeaseKeeper;
  private readonly slots: HandlerSlots;
  private handingBack = false;
  /** Concurrent jobs record plain successes together, and the turns they hand on are pushed together. */
  private readonly successes = new Batcher(
    (items: Success[]) => this.recordSuccesses(items),
    async (item: Success) => (await this.recordSuccesses([item]))[0]!,
    BATCH,
    BATCHES_IN_FLIGHT,
  );
  /** The last attempt of each task taken on this worker, by task: when it is claimed (or found nothing to run), its handler ended, its outcome written. */
  private readonly localTurns = new Map<string, { claimed: Promise<void>; handled: Promise<void>; settled: Promise<void> }>();
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
    this.lease = leasePolicy(config);
    this.leases = new LeaseKeeper(attempts, this.lease, (error) => this.logger.warn({ err: error }, 'could not renew or check leases; attempts abort before their lease ends'));
    this.leases.start();
    this.slots = new HandlerSlots(config.workerConcurrency);
  }

  /**
   * Takes this worker's turn of a task: waits for the attempt of the same task taken before it here
   * to be claimed, then (at most LOCAL_TURN_WAIT_MS) for its handler to end, and then for its
   * outcome to be written. A backlog's consecutive slots of one task often meet on one worker, and
   * the run ahead is usually short: taken in that order, each finds its task free and starts in one
   * statement — no read, no park, no job of its own for its turn. A long run ahead only delays the
   * slot's judgement (a park, a skip, a replace) by the short wait.
   */
  private async takeLocalTurn(taskId: string | undefined): Promise<LocalTurn> {
    const none = { claimed: () => undefined, handled: () => undefined, settle: () => undefined };
    if (!taskId) return none;
    const previous = this.localTurns.get(taskId);
    const marks = { claimed: deferred(), handled: deferred(), settled: deferred() };
    const mine = { claimed: marks.claimed.promise, handled: marks.handled.promise, settled: marks.settled.promise };
    this.localTurns.set(taskId, mine);
    if (previous) {
      await previous.claimed;
      let timer: NodeJS.Timeout | undefined;
      const handled = await Promise.race([previous.handled.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), LOCAL_TURN_WAIT_MS)))]);
      clearTimeout(timer);
      if (handled) await previous.settled;
    }
    return {
      claimed: marks.claimed.resolve,
      handled: marks.handled.resolve,
      settle: () => {
        marks.claimed.resolve();
        marks.handled.resolve();
        marks.settled.resolve();
        if (this.localTurns.get(taskId) === mine) this.localTurns.delete(taskId);
      },
    };
  }

  onModuleDestroy(): void {
    this.leases.stop();
  }

  /** Called with the task id whenever an exclusive attempt ends here: a slot of the task waiting on this worker may go. */
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

  /**
   * Claims and runs a job's execution: what became of it and of its job (see {@link Disposition}):
   * `ended` after a run, else the claim's own disposition.
   */
  async runExecution(request: RunRequest, options: RunOptions): Promise<Disposition> {
    // A timer may fire a little early (it counts from the loop's cached time): wait until the instant itself.
    const until = Date.now() + holdBeforeSlotMs(request.fireAt, this.clock.now(), this.config.fireLeadMs);
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, until - Date.now()));
    if (this.handingBack) return { kind: 'dropped', why: 'released' };
    const turn = await this.takeLocalTurn(request.taskId);
    // A handler slot is held from the claim to the end of the handler; the outcome is written after.
    const release = await this.slots.acquire();
    try {
      if (this.handingBack) return { kind: 'dropped', why: 'released' };
      const attemptId = randomUUID();
      const claim = await tracing.withSpan('punctual.claim', {}, () =>
        this.claimer.claim({ id: request.executionId, attemptId, workerId: options.workerId, releasedAt: request.releasedAt, taskId: request.taskId }),
      );
      turn.claimed();
      if (claim.kind !== 'run') return claim;
      const { execution, task } = claim;
      // Runs of a task that may overlap (`allow`) do not wait for each other.
      if (!execution.exclusive) turn.settle();
      tracing.annotate({ 'punctual.task': execution.taskName, 'punctual.attempt': execution.attempt });
      try {
        return { kind: 'ended', outcome: await this.runClaimed(execution, task, attemptId, claim.leaseValidUntil, options, () => (turn.handled(), release())) };
      } finally {
        if (execution.exclusive && execution.taskId) for (const listener of this.turnListeners) listener(execution.taskId);
        if (task.concurrencyKey !== null) for (const listener of this.permitListeners) listener(task.concurrencyKey);
      }
    } finally {
      turn.settle();
      release();
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
    const control = new AttemptControl(execution.id, attemptId, this.lease, task.timeoutMs, leaseValidUntil);
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

  /** Records successes in one statement; the turns their ends hand on are pushed meanwhile (see TurnHandover). */
  private async recordSuccesses(items: Success[]): Promise<boolean[]> {
    const recorded = await this.attempts.succeed(items);
    void this.claimer.handover.afterEnds(recorded.handed, recorded.waited);
    return recorded.current;
  }

  private async recordSuccess(execution: TaskExecution, task: Task, attemptId: string, result: unknown, fields: object): Promise<RunOutcome> {
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
        return { ok: recorded.current[0]!, after: () => this.claimer.handover.afterEnds(recorded.handed, recorded.waited) };
      },
      () => this.successes.run(success),
    );
    if (ok) this.metrics.executions.inc({ status: 'succeeded', handler: task.handler });
    this.logger.log({ ...fields, status: ok ? 'succeeded' : 'stale' }, ok ? 'execution succeeded' : 'stale attempt; result dropped');
    return ok ? 'succeeded' : 'stale';
  }

  private async recordFailure(execution: TaskExecution, task: Task, attemptId: string, error: unknown, fields: object): Promise<RunOutcome> {
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
    else if (execution.exclusive && execution.taskId) await this.claimer.handover.handOverAndPush([execution.taskId]);
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
