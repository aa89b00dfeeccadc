import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { AttemptsRepository, type Task, type TaskExecution } from '@punctual/db';
import { type HandlerLog, HandlerRegistry, handlerTaskOf, hmacSigner, UnrecoverableError } from '@punctual/handlers';
import { Metrics } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import { ClockService } from '@punctual/clock';
import { quotaFlowKey } from '@punctual/planning';
import { concurrencyKeyOf } from '../claim/flow-claims.js';
import { AttemptAbortedError, AttemptControl } from './attempt-control.js';
import { waitBeforeSlotMs } from '../claim/claim-checks.js';
import type { Disposition, RunOutcome } from '../claim/disposition.js';
import { ExecutionClaimer } from '../claim/execution-claimer.js';
import { leasePolicy, type LeasePolicy } from './lease-policy.js';
import { RunCapacity } from './run-capacity.js';
import { LeaseKeeper, type OverrunPermit } from './lease-keeper.js';
import { LocalTurns } from '../claim/local-turns.js';
import { OutcomeRecorder } from '../outcome/outcome-recorder.js';

/** How long a cancel heard for an execution not (yet) running here is remembered: its claim may be on its way. */
const CANCEL_MEMORY_MS = 60_000;
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

/**
 * One attempt of one execution: waiting for its slot, taken in this worker's order of its task's
 * attempts (see LocalTurns), claimed (see ExecutionClaimer), its handler run under an
 * AttemptControl in a place of the worker's run capacity, its outcome recorded (see OutcomeRecorder).
 * A lost claim or a stale write is an outcome, not an error. Every instant it judges by is
 * Postgres' (the claim's `now()`, or {@link ClockService}).
 */
@Injectable()
export class ExecutionRunner implements OnModuleDestroy {
  private readonly logger = new Logger(ExecutionRunner.name);
  private readonly active = new Map<string, AttemptControl>();
  /** Cancels heard for executions not running here, by id, until when they are remembered. */
  private readonly cancelled = new Map<string, number>();
  private readonly lease: LeasePolicy;
  private readonly leases: LeaseKeeper;
  private readonly capacity: RunCapacity;
  private handingBack = false;
  private readonly localTurns = new LocalTurns();
  private readonly turnListeners: ((taskId: string) => void)[] = [];
  private readonly permitListeners: ((key: string) => void)[] = [];

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    attempts: AttemptsRepository,
    private readonly handlers: HandlerRegistry,
    private readonly claimer: ExecutionClaimer,
    private readonly outcomes: OutcomeRecorder,
    private readonly clock: ClockService,
    private readonly metrics: Metrics,
  ) {
    metrics.trackWorkerLoad(config.instanceId, config.workerConcurrency, () => this.running);
    this.lease = leasePolicy(config);
    this.leases = new LeaseKeeper(attempts, this.lease, (error) =>
      this.logger.warn({ err: error }, 'could not renew or check leases; attempts abort before their lease ends'),
    );
    this.leases.start();
    this.capacity = new RunCapacity(config.workerConcurrency);
  }

  async onModuleDestroy(): Promise<void> {
    this.leases.stop();
    // Its overrunning handlers end with it (or run on unsupervised): their permits are not held past it.
    await this.leases
      .dropPermits()
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error },
          'could not give back the concurrency permits of overrunning handlers; they lapse with their leases',
        ),
      );
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
   * waiting for its slot, or arriving later, is not claimed at all: the relay re-enqueues it.
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
    const until = Date.now() + waitBeforeSlotMs(request.fireAt, this.clock.now(), this.config.fireLeadMs);
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, until - Date.now()));
    if (this.handingBack) return { kind: 'dropped', why: 'released' };
    const turn = await this.localTurns.take(request.taskId);
    // A place of the run capacity is taken from the claim to the end of the handler — an aborted handler's real
    // end, however late it honours its signal; the outcome is written after.
    const release = await this.capacity.acquire();
    let overrun: Promise<void> | null = null;
    // `overrun` never rejects (see overrunning): the place is given back when the handler settles.
    const releaseSlot = () => (overrun ? void overrun.then(release) : release());
    try {
      if (this.handingBack) return { kind: 'dropped', why: 'released' };
      const attemptId = randomUUID();
      const claim = await tracing.withSpan('punctual.claim', {}, () =>
        this.claimer.claim({
          id: request.executionId,
          attemptId,
          workerId: options.workerId,
          releasedAt: request.releasedAt,
          taskId: request.taskId,
        }),
      );
      turn.claimed();
      if (claim.kind !== 'run') return claim;
      const { execution, task } = claim;
      // Runs of a task that may overlap (`allow`) do not wait for each other.
      if (!execution.exclusive) turn.settle();
      tracing.annotate({ 'punctual.task': execution.taskName, 'punctual.attempt': execution.attempt });
      try {
        const outcome = await this.runClaimed(
          execution,
          task,
          attemptId,
          claim.leaseValidUntil,
          options,
          () => (turn.handled(), releaseSlot()),
          (settled) => {
            overrun = settled;
          },
        );
        // Ended by a cancel (or replace) that raced the handler's own end: the permit the cancel kept
        // for it is given back here, as an overrunning handler's is when it settles.
        if (
          permitKeysOf(task, execution).length > 0 &&
          overrun === null &&
          (outcome === 'cancelled' || outcome === 'stale')
        ) {
          await this.leases
            .dropPermit(attemptId)
            .catch((error: unknown) =>
              this.logger.warn(
                { err: error, executionId: execution.id },
                "could not give back the run's concurrency permit; it lapses with its lease",
              ),
            );
        }
        return { kind: 'ended', outcome };
      } finally {
        if (execution.exclusive && execution.taskId)
          for (const listener of this.turnListeners) listener(execution.taskId);
        const permitKey = concurrencyKeyOf(task);
        if (permitKey !== null) for (const listener of this.permitListeners) listener(permitKey);
        // A run started under its namespace's run quotas frees one of `maxConcurrentRuns`.
        if (execution.quotaNamespace !== null)
          for (const listener of this.permitListeners) listener(quotaFlowKey(execution.quotaNamespace));
      }
    } finally {
      turn.settle();
      releaseSlot();
    }
  }

  private async runClaimed(
    execution: TaskExecution,
    task: Task,
    attemptId: string,
    leaseValidUntil: number,
    options: RunOptions,
    releaseSlot: () => void,
    onOverrun: (settled: Promise<void>) => void,
  ): Promise<RunOutcome> {
    if (execution.attempt === 1 && execution.startedAt) {
      const lagMs = execution.startedAt.getTime() - execution.fireAt.getTime();
      this.metrics.startLag.observe(Math.max(0, lagMs) / 1000);
      // A slot of the schedule (a catch-up run stands for late ones); manual runs and backfills have no slo.
      if (task.sloStartWithinMs !== null && (execution.trigger === 'schedule' || execution.trigger === 'catchup')) {
        this.metrics.observeTaskSlot(
          task.name,
          execution.trigger === 'catchup' ? Infinity : lagMs,
          task.sloStartWithinMs,
        );
      }
    }
    const fields = { executionId: execution.id, task: execution.taskName, attempt: execution.attempt };
    const control = new AttemptControl(execution.id, attemptId, this.lease, task.timeoutMs, leaseValidUntil);
    this.active.set(execution.id, control);
    this.leases.track(control);
    if (this.cancelled.delete(execution.id)) control.abort('cancelled');
    this.logger.log({ ...fields, status: 'running' }, 'execution started');
    const stopTimer = this.metrics.handlerDuration.startTimer({ handler: task.handler });
    let run: Promise<unknown> | undefined;
    try {
      let result: unknown;
      try {
        const handler = this.handlers.get(task.handler);
        // The claim sends a run to a worker that offers its handler; here none did when it was claimed.
        if (!handler) throw new UnrecoverableError(`no live worker offers a handler named "${task.handler}"`);
        run = tracing.withSpan('punctual.handler', { 'punctual.handler': task.handler }, () =>
          handler.run({
            execution,
            task: handlerTaskOf(task),
            sign: hmacSigner(task.secret),
            payload: execution.payload ?? task.payload,
            attempt: execution.attempt,
            signal: control.signal,
            log: this.handlerLog(fields),
            progress: options.progress ?? (async () => undefined),
          }),
        );
        // A handler that ignores its signal cannot hold the attempt past an abort.
        result = await Promise.race([run, control.aborted]);
      } catch (error) {
        if (run && error instanceof AttemptAbortedError) {
          const keys = permitKeysOf(task, execution);
          const permit = keys.length === 0 ? null : { attemptId, executionId: execution.id, keys };
          const overrun = this.overrunning(run, fields, error.reason, permit);
          onOverrun(overrun.settled);
          // Timed out: the attempt stays `running` — counted against its concurrency key's limit and
          // its task's overlap, its lease renewed — until the handler honours its signal (at most a
          // lease more), so no retry or other run of the key starts beside a handler still at work.
          if (error.reason === 'timeout') {
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([
              overrun.settled,
              new Promise((resolve) => (timer = setTimeout(resolve, this.lease.leaseMs))),
            ]);
            clearTimeout(timer);
          }
          // A handler still at work past its row's end keeps its key's permit: written before the end is.
          await overrun.permitHeld;
        }
        releaseSlot();
        return await this.outcomes.record(
          () => this.outcomes.recordFailure(execution, task, attemptId, error, fields),
          fields,
          () => control.disowned,
        );
      }
      releaseSlot();
      // Only the handler's own errors are failures: a success that cannot be written is not retried
      // as a failure (that would run the handler again), it is written again.
      return await this.outcomes.record(
        () => this.outcomes.recordSuccess(execution, task, attemptId, result, fields),
        fields,
        () => control.disowned,
      );
    } finally {
      stopTimer();
      control.finish();
      this.leases.untrack(control);
      this.active.delete(execution.id);
    }
  }

  /**
   * A handler whose attempt was aborted may still be running (it honours its signal late, or
   * never): counted in `punctual_handlers_overrunning` until it settles, and holding its
   * concurrency key's permit meanwhile (`permitHeld` resolves once that is written), so the key's
   * limit counts it after its row has ended. When it settles the permit is given back — also the
   * one a cancel kept for it (see `TransitionSpec.keepPermit`) — and the key's held runs are woken.
   */
  private overrunning(
    run: Promise<unknown>,
    fields: object,
    cause: string,
    permit: OverrunPermit | null,
  ): { settled: Promise<void>; permitHeld: Promise<void> } {
    let settled = false;
    const done = run
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => (settled = true));
    const warn = (message: string) => (error: unknown) => this.logger.warn({ ...fields, err: error }, message);
    // A handler that honours its signal settles within the same turn or the next few: not worth a word.
    const permitHeld = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      if (settled) return;
      this.metrics.handlersOverrunning.inc();
      this.logger.warn(
        { ...fields, cause },
        'the handler runs on after its attempt was aborted; its place is taken until it ends',
      );
      void done.then(() => this.metrics.handlersOverrunning.dec()); // `done` never rejects
      if (permit)
        await this.leases.keepPermit(permit).catch(warn("could not hold the overrunning handler's concurrency permit"));
    });
    if (permit) {
      void Promise.all([done, permitHeld]).then(async () => {
        await this.leases
          .dropPermit(permit.attemptId)
          .catch(warn("could not give back the handler's concurrency permit; it lapses with its lease"));
        for (const key of permit.keys) for (const listener of this.permitListeners) listener(key);
      });
    }
    return { settled: done, permitHeld };
  }

  private handlerLog(fields: object): HandlerLog {
    return {
      info: (message, extra) => this.logger.log({ ...fields, ...extra }, message),
      warn: (message, extra) => this.logger.warn({ ...fields, ...extra }, message),
      error: (message, extra) => this.logger.error({ ...fields, ...extra }, message),
    };
  }
}

/**
 * The capacities a run takes a permit of, which a handler running on after its run ended keeps:
 * its concurrency key's, and its namespace's `maxConcurrentRuns` when it started under it.
 */
function permitKeysOf(task: Task, execution: Pick<TaskExecution, 'quotaNamespace'>): string[] {
  const key = concurrencyKeyOf(task);
  return [
    ...(key === null ? [] : [key]),
    ...(execution.quotaNamespace === null ? [] : [quotaFlowKey(execution.quotaNamespace)]),
  ];
}
