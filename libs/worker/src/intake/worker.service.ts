import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { bestEffort } from '@punctual/metrics';
import {
  EXECUTION_CANCEL_CHANNEL,
  EXECUTION_JOB,
  executionJobId,
  type ExecutionJobData,
  ExecutionsQueue,
  executionsQueueName,
  FLOW_WAKE_CHANNEL,
  handlerOfQueue,
} from '@punctual/queue';
import { tracing } from '@punctual/tracing';
import { RedisService, type RedisConnection } from '@punctual/redis';
import { DelayedError, type Job, Worker } from 'bullmq';
import { HandlerRegistry } from '@punctual/handlers';
import { ExecutionRunner } from '../run/execution-runner.js';
import { ExecutionClaimer } from '../claim/execution-claimer.js';
import { waitBeforeRetryMs, WaitingRoom, wakePassedOn } from './waiting-room.js';
import { ANNOUNCE_MS, WorkerAnnouncer } from './worker-announcer.js';

/**
 * A job a worker holds is locked in BullMQ, the lock renewed every half of this while the worker
 * lives; a job whose worker died is handed back by the stalled-job check once its lock lapses.
 * Until then nothing replaces it — the relay sees a job — and a task's later slots wait behind it,
 * in slot order: BullMQ's 30 s defaults let a worker's `kill -9` between taking a job and claiming
 * it (holding it until its `fire_at`, or as `buffer_one`'s waiting slot) delay a task 30–60 s. A
 * claimed run is guarded by its Postgres lease instead (LEASE_MS).
 */
const JOB_LOCK_MS = 10_000;
const STALLED_CHECK_MS = 5_000;
/**
 * Jobs taken from the queue per handler slot (WORKER_CONCURRENCY): the extra ones hold until their
 * `fire_at`, read their claims and write their outcomes while the slots run handlers.
 */
const JOBS_PER_HANDLER_SLOT = 2;
/**
 * How long a worker that could not reach Postgres for a claim stops taking jobs: the job it gave
 * back (in a second) goes to a worker that can reach Postgres, not again to this one, which would
 * take it and give it back again, and again — a partitioned worker beside a healthy one delayed a
 * retry by 20 s and more that way. Running handlers go on meanwhile.
 */
const UNREACHABLE_BACK_OFF_MS = 3_000;
/**
 * How long an idle BullMQ worker waits on its queue before it looks again (BullMQ's default is 5 s).
 * A job handed back with a delay wakes one waiting worker; when that one is holding off (above), the
 * others see the job within this.
 */
const DRAIN_DELAY_S = 1;
/** How soon a BullMQ worker fetches again after Redis failed under it (a primary failing over). */
const RUN_RETRY_MS = 1_000;

/**
 * The worker role: a BullMQ worker on the queue of each handler this process offers (see
 * executionsQueueName) that hands each job to the runner — so it only ever takes runs it can run —
 * and a subscriber that aborts executions cancelled elsewhere. On shutdown it stops taking jobs, lets
 * running handlers finish for up to SHUTDOWN_GRACE_MS, then aborts and hands back the rest.
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorkerService.name);
  /** One BullMQ worker per handler offered here, on that handler's queue. */
  private workers: Worker<ExecutionJobData>[] = [];
  private subscriber: RedisConnection | null = null;
  private announceTimer: NodeJS.Timeout | null = null;
  /** While set, this worker takes no jobs (see UNREACHABLE_BACK_OFF_MS); it resumes when it fires. */
  private holdingOff: NodeJS.Timeout | null = null;
  private readonly waiting = new WaitingRoom();
  /** When each flow-control key last moved (`performance.now()`), as heard here: see {@link flowMoved}. */
  private readonly flowMovedAt = new Map<string, number>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly runner: ExecutionRunner,
    private readonly claimer: ExecutionClaimer,
    private readonly announcer: WorkerAnnouncer,
    private readonly handlers: HandlerRegistry,
    private readonly queue: ExecutionsQueue,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber = this.redis.connect();
    const cancelChannel = this.redis.key(EXECUTION_CANCEL_CHANNEL);
    await this.subscriber.subscribe(cancelChannel, this.redis.key(FLOW_WAKE_CHANNEL));
    this.subscriber.on('message', (channel, message: string) => {
      if (channel === cancelChannel) this.runner.abortExecution(message, 'cancelled');
      // A run of the key ended or a held one started somewhere: this worker's first held run of it asks again.
      else this.flowMoved(message);
    });
    this.runner.onTurnFreed((taskId) => void this.waiting.wake({ taskId }));
    this.runner.onPermitFreed((key) => void this.claimer.wakeFlow(key));
    // The handler slots (WORKER_CONCURRENCY) are shared by every handler; each queue may hold as
    // many jobs as the slots would take, so one handler's runs can use them all.
    const connection = this.redis.connect();
    for (const handler of this.handlers.names()) {
      const worker = new Worker<ExecutionJobData>(
        executionsQueueName(handler),
        (job, token) => this.process(job, token),
        {
          connection,
          prefix: this.redis.prefix,
          concurrency: this.config.workerConcurrency * JOBS_PER_HANDLER_SLOT,
          lockDuration: JOB_LOCK_MS,
          stalledInterval: STALLED_CHECK_MS,
          drainDelay: DRAIN_DELAY_S,
          // After a Redis error (a failover, a restart) the worker fetches again within a second, not BullMQ's 15 s.
          runRetryDelay: RUN_RETRY_MS,
        },
      );
      worker.on('error', (error) => this.logger.error({ err: error, handler }, 'worker error'));
      this.workers.push(worker);
    }
    if (this.workers.length === 0) this.logger.warn('this worker offers no handlers: it takes no runs');
    const announce = (): Promise<unknown> =>
      this.announceTimer
        ? bestEffort(
            this.announcer.announce(this.config.instanceId, this.handlers.names(), this.config.workerConcurrency),
            'worker.announce',
          )
        : Promise.resolve();
    // An announcement never rejects (best effort): the next one tells Redis again.
    this.announceTimer = setInterval(() => void announce(), ANNOUNCE_MS);
    await announce();
    // Redis back after a restart (its directory empty): this worker is in it again at once.
    this.redis.client.on('ready', () => void announce());
  }

  /** A flow-control key moved: its first run held here asks again, and a run being held right now will not wait. */
  private flowMoved(key: string): void {
    if (this.flowMovedAt.size >= 10_000) this.flowMovedAt.clear();
    this.flowMovedAt.set(key, performance.now());
    void this.waiting.wake({ flowKey: key }, 1); // never rejects: a job it cannot bring forward comes on its own
  }

  /**
   * Runs a job's execution and applies what became of it (the {@link Disposition}) to the job, in
   * this one place: a job whose run ended, whose slot was parked until its turn, skipped or found
   * nothing to do ends (it is removed: the history is in Postgres). One that must come back — a few
   * milliseconds early, late (the leader's misfire policy decides it), held by flow control, its
   * handler offered elsewhere, Postgres unreachable — goes back to the queue as a delayed job (its
   * place in the worker's concurrency is not held meanwhile); one held by flow control comes back
   * when its key moves (see {@link WaitingRoom}), or after the wait its claim was given.
   */
  private async process(job: Job<ExecutionJobData>, token?: string): Promise<string> {
    if (job.data.group) return this.processGroup(job);
    this.waiting.remove(job.id);
    const { wokenFor, ...data } = job.data;
    const startedAt = performance.now();
    // One span per attempt, continuing the trace of whatever queued the job (a fire chunk, a failed attempt).
    const disposition = await tracing.withSpan(
      'punctual.attempt',
      { 'punctual.execution.id': job.data.executionId },
      () =>
        this.runner.runExecution(job.data, {
          workerId: this.config.instanceId,
          progress: (value) => job.updateProgress(value),
        }),
      { parent: job.data.trace },
    );
    // Woken for a key's room it did not take: the key's next waiter is told (see wakePassedOn).
    const passOn = wakePassedOn(wokenFor, disposition);
    if (passOn !== undefined) void this.claimer.wakeFlow(passOn); // never rejects (a failure is logged)
    switch (disposition.kind) {
      case 'ended':
        return disposition.outcome;
      case 'skipped':
        return `skipped: ${disposition.reason}`;
      case 'parked':
        return 'parked';
      case 'dropped':
        return disposition.why;
      case 'run':
        throw new Error('a claimed run came back unrun');
      case 'moved':
        await this.move(job.data, disposition);
        return `moved to ${executionsQueueName(disposition.handler)}`;
      case 'later':
        break;
    }
    if (disposition.why === 'unreachable') this.backOff();
    const { waitsFor } = disposition;
    // Held on a key that moved while its claim was on its way: the word came before the job was
    // here to be woken, so it asks again at once rather than wait for the next one.
    const missedWord =
      waitsFor !== undefined && 'flowKey' in waitsFor && (this.flowMovedAt.get(waitsFor.flowKey) ?? -1) >= startedAt;
    const wait = missedWord ? 1 : (disposition.afterMs ?? waitBeforeRetryMs(Date.now() - job.timestamp));
    // It waits again: the wake that brought it is spent.
    if (wokenFor !== undefined) await bestEffort(job.updateData(data), 'worker.clear-woken');
    await job.moveToDelayed(Date.now() + Math.max(1, Math.ceil(wait)), token);
    if (waitsFor) this.waiting.add(waitsFor, job);
    throw new DelayedError();
  }

  /**
   * Runs a fire group's executions side by side, each claimed, run and recorded as a job of its own
   * would be (sharing the worker's handler slots with every other run). One that must come back
   * goes back to the queue as a job of its own; the group's job ends once every member is decided.
   */
  private async processGroup(job: Job<ExecutionJobData>): Promise<string> {
    const { group = [], fireAt, releasedAt, trace } = job.data;
    const handler = handlerOfQueue(job.queueName)!;
    const dispositions = await Promise.all(
      group.map((member) =>
        tracing.withSpan(
          'punctual.attempt',
          { 'punctual.execution.id': member.executionId },
          () => this.runner.runExecution({ ...member, fireAt, releasedAt }, { workerId: this.config.instanceId }),
          { parent: trace },
        ),
      ),
    );
    await Promise.all(
      group.map((member, i) => {
        const d = dispositions[i]!;
        return d.kind === 'moved' ? this.move({ ...member, fireAt, releasedAt, trace }, d) : Promise.resolve();
      }),
    );
    if (dispositions.some((d) => d.kind === 'later' && d.why === 'unreachable')) this.backOff();
    const later = group.flatMap((member, i) => {
      const d = dispositions[i]!;
      return d.kind === 'later'
        ? [{ member, afterMs: Math.max(1, Math.ceil(d.afterMs ?? waitBeforeRetryMs(Date.now() - job.timestamp))) }]
        : [];
    });
    await Promise.all(
      later.map(({ member, afterMs }) =>
        this.queue
          .queueFor(handler)
          .add(
            EXECUTION_JOB,
            { executionId: member.executionId, taskId: member.taskId, releasedAt, trace },
            { jobId: executionJobId(member.executionId), delay: afterMs },
          ),
      ),
    );
    if (fireAt !== undefined)
      await bestEffort(
        this.queue.forgetGroup(
          handler,
          fireAt,
          group.map((m) => m.executionId),
        ),
        'worker.forget-group',
      );
    const counts = new Map<string, number>();
    for (const d of dispositions) {
      const key = d.kind === 'ended' ? d.outcome : d.kind;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  }

  /**
   * Postgres did not answer a claim: this worker takes no jobs for UNREACHABLE_BACK_OFF_MS (its
   * running handlers go on), so what it gives back goes to a worker that can claim it.
   */
  private backOff(): void {
    if (this.holdingOff || this.workers.length === 0) return;
    this.logger.warn(
      { forMs: UNREACHABLE_BACK_OFF_MS },
      'Postgres does not answer claims: taking no jobs for a while, so that another worker takes them',
    );
    const warn = (error: unknown) => this.logger.warn({ err: error }, 'could not pause or resume taking jobs');
    for (const worker of this.workers) void worker.pause(true).catch(warn); // a failure is warned of
    this.holdingOff = setTimeout(() => {
      this.holdingOff = null;
      if (this.announceTimer) for (const worker of this.workers) void Promise.resolve(worker.resume()).catch(warn);
    }, UNREACHABLE_BACK_OFF_MS);
  }

  /**
   * Pushes the job of a run whose handler is not this queue's to its handler's queue (see the
   * `moved` disposition), as it was: a first attempt keeps its instant and its release.
   */
  private async move(data: ExecutionJobData, moved: { handler: string; attempt: number }): Promise<void> {
    const { executionId, taskId, fireAt, releasedAt, trace } = data;
    const timing = moved.attempt === 1 ? { fireAt, releasedAt } : {};
    await this.queue
      .queueFor(moved.handler)
      .add(
        EXECUTION_JOB,
        { executionId, taskId, ...timing, trace },
        { jobId: executionJobId(executionId, moved.attempt) },
      );
  }

  async onModuleDestroy(): Promise<void> {
    if (this.workers.length === 0) return;
    if (this.announceTimer) clearInterval(this.announceTimer);
    this.announceTimer = null;
    if (this.holdingOff) clearTimeout(this.holdingOff);
    this.holdingOff = null;
    await bestEffort(this.announcer.withdraw(this.config.instanceId), 'worker.withdraw');
    this.claimer.stop();
    const closing = Promise.all(this.workers.map((w) => w.close()));
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace-over'>(
      (resolve) => (timer = setTimeout(() => resolve('grace-over'), this.config.shutdownGraceMs)),
    );
    if ((await Promise.race([closing.then(() => 'closed' as const), graceOver])) === 'grace-over') {
      this.logger.warn({ running: this.runner.running }, 'shutdown grace over: aborting running handlers');
      this.runner.abortAll();
    }
    clearTimeout(timer);
    await closing;
    // A subscriber that cannot QUIT has lost its connection already: nothing is left to close.
    await this.subscriber?.quit().catch(() => undefined);
  }
}
