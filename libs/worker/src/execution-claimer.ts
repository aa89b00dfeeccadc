import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import {
  type ClaimRead,
  ClaimsRepository,
  type ClaimWrite,
  type ClaimWriteOutcome,
  ExecutionTransitionsRepository,
  type FlowClaimOutcome,
  FlowControlRepository,
  flowOrder,
  type FlowPolicy,
  isConnectionError,
  type SkipReason,
  type Task,
  type TaskExecution,
} from '@punctual/db';
import { WorkerDirectory } from '@punctual/cluster';
import { HandlerRegistry } from '@punctual/handlers';
import { Metrics } from '@punctual/metrics';
import { type ClaimContext, type ClaimVerdict, judgeClaim, withPinnedDefinition } from '@punctual/planning';
import { EXECUTION_CANCEL_CHANNEL, FLOW_WAKE_CHANNEL } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { Batcher } from './batcher.js';

/** How often a buffered execution (`overlap=buffer_one`) asks again whether the run it waits for ended. */
const BUFFER_POLL_MS = 100;
/** Reads and writes of one claim before a job that keeps losing races is told to come back later. */
const MAX_ROUNDS = 8;
/** How long a claim whose answer was lost with its connection keeps asking Postgres whether it committed. */
const CONFIRM_FOR_MS = 5_000;
/** A confirmed claim with less of its lease left than this is given back rather than run. */
const MIN_LEASE_LEFT_FRACTION = 0.5;
/**
 * Claims read or written per statement, and statements of each kind in flight at once: a worker's
 * concurrent jobs share a statement, and the next batch leaves while one is on its way (three of
 * each kind, with the lease keeper and the notifier, fit the process's pool of ten connections).
 */
export const BATCH = 200;
export const BATCHES_IN_FLIGHT = 3;
/** A claim this close to its `fire_at` waits for it in place; one further off comes back through the queue. */
const SHORT_EARLY_MS = 100;
/**
 * A run held for a permit comes back when a run of its key ends, or a held one starts and leaves
 * room (on any worker); without that word it asks again after this, later the more runs wait ahead
 * of it — a safety net (a word lost with Redis), not the pace.
 */
const FLOW_POLL_MS = 1_000;
const FLOW_POLL_MAX_MS = 15_000;
/** Flow-control lanes a worker keeps (see flowLane). */
const FLOW_LANES_KEPT = 10_000;
/** How long a job waits before it is tried again when Postgres did not answer its claim. */
const UNREACHABLE_RETRY_MS = 1_000;
/** How long the cluster's list of offered handlers is trusted before it is read again from Redis. */
const OFFERED_FOR_MS = 2_000;

/**
 * Postgres did not answer a claim's statement in time (a network partition leaves it hanging with
 * no error): the job is handed back to the queue instead of being held — another worker may reach
 * Postgres. Its code makes it a connection error (see `isConnectionError`).
 */
export class ClaimTimeoutError extends Error {
  override readonly name = 'ClaimTimeoutError';
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`Postgres did not answer the claim within ${ms} ms`);
  }
}

export interface ClaimRequest {
  id: string;
  /** The fencing token of the attempt, made by the worker. */
  attemptId: string;
  workerId: string;
  /** When the leader released the job (epoch ms, the cluster's clock), as the job says. */
  releasedAt?: number;
}

/**
 * - `claimed`: the attempt is this worker's: the execution as claimed, the definition it runs
 *   under (the task at the version judged, with an edit's pin over it) and until when its lease
 *   holds at least, on this process's monotonic clock (`performance.now()`).
 * - `skipped`: the slot ended `skipped` without starting.
 * - `wait`, `early`, `late`: the job comes back (after `retryInMs` when known; a `wait` may be
 *   woken earlier when a run of `taskId` ends on this worker, or — held by flow control — when a
 *   run of `flowKey` ends, or a held one starts and leaves room, on any worker; `order`: its
 *   place among them, see `flowOrder`).
 * - `lost`: nothing to do.
 */
export type ClaimResult =
  | { kind: 'claimed'; execution: TaskExecution; task: Task; leaseValidUntil: number }
  | { kind: 'skipped'; reason: SkipReason }
  | { kind: 'wait'; taskId: string | null; retryInMs?: number; flow?: { key: string; order: string } }
  | { kind: 'early'; retryInMs: number }
  | { kind: 'late' }
  | { kind: 'lost' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A claim's read made ahead of the slot's instant, and when it arrived (`performance.now()`). */
export interface EarlyRead {
  read: ClaimRead;
  at: number;
}

/**
 * `promise`, or a {@link ClaimTimeoutError} after `ms` (the statement itself is left to finish or
 * fail); `gaveUp` is told when the wait ends unanswered.
 */
function answeredWithin<T>(promise: Promise<T>, ms: number, gaveUp?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => (gaveUp?.(), reject(new ClaimTimeoutError(ms))), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A task's flow control, or null when it has none (its claims share the batched write). */
export function flowPolicyOf(task: Task): FlowPolicy | null {
  if (task.concurrencyKey === null && task.rateKey === null) return null;
  return {
    concurrency: task.concurrencyKey === null ? null : { key: task.concurrencyKey, limit: task.concurrencyLimit! },
    rate: task.rateKey === null ? null : { key: task.rateKey, limit: task.rateLimit!, perMs: task.ratePerMs! },
  };
}

/** What the judgement reads of a claim's snapshot. */
export function claimContextOf(read: ClaimRead): ClaimContext {
  const { execution: e, task } = read;
  return {
    slot: {
      status: e.status, attempt: e.attempt, trigger: e.trigger, scheduledFor: e.scheduledFor, fireAt: e.fireAt, exclusive: e.exclusive,
      taskVersion: e.taskVersion, pinned: e.pinned, leaseUntil: e.leaseUntil, nextAttemptAt: e.nextAttemptAt, heldAt: e.heldAt,
    },
    task,
    holders: read.holders,
    earlierDue: read.earlierDue,
    otherBuffered: read.otherBuffered,
  };
}

/**
 * Claims attempts: reads what the judgement needs (one statement for the claims of concurrent
 * jobs), judges with `judgeClaim`, and does what the verdict says — the fenced write of the claim
 * (one statement for many too), a skip, a buffer mark, the cancel of a run a newcomer replaces —
 * reading again whenever a write finds the world changed since the read.
 */
@Injectable()
export class ExecutionClaimer {
  private readonly logger = new Logger(ExecutionClaimer.name);
  private stopping = false;
  private readonly reads: Batcher<string, ClaimRead | null>;
  private readonly writes: Batcher<ClaimWrite, ClaimWriteOutcome>;
  /**
   * Flow-controlled claims by their flow control (keys and limits): the claims of one lane that
   * arrive together share one transaction, and a lane sends one at a time (see FlowControlRepository).
   */
  private readonly flowLanes = new Map<string, Batcher<ClaimWrite, FlowClaimOutcome>>();
  /** Flow-controlled claims of any keys, looked at together first: those whose keys are full are held in one statement. */
  private readonly flowHolds: Batcher<{ write: ClaimWrite; flow: FlowPolicy }, FlowClaimOutcome | null>;
  /** How long a claim's statement may go unanswered: well within the lease a committed claim would hold. */
  private readonly answerWithinMs: number;
  /** The handlers the cluster's live workers offer, as last read, and when (`performance.now()`). */
  private offered: { names: Promise<ReadonlySet<string>>; at: number } | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly claims: ClaimsRepository,
    private readonly executions: ExecutionTransitionsRepository,
    private readonly flow: FlowControlRepository,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
    private readonly handlers: HandlerRegistry,
    private readonly directory: WorkerDirectory,
  ) {
    this.reads = new Batcher(
      async (ids) => {
        const found = await this.claims.read([...new Set(ids)]);
        return ids.map((id) => found.get(id) ?? null);
      },
      null,
      BATCH,
      BATCHES_IN_FLIGHT,
    );
    this.writes = new Batcher(
      (writes) => this.claims.claimMany(writes, this.config.leaseMs),
      (write) => this.claims.claimOne(write, this.config.leaseMs),
      BATCH,
      BATCHES_IN_FLIGHT,
      // A batch that lost its connection may have committed: each claim asks whether it did (see confirm).
      (error) => !isConnectionError(error),
    );
    this.flowHolds = new Batcher(
      (claims) => this.flow.holdIfFull(claims),
      async (claim) => (await this.flow.holdIfFull([claim]))[0]!,
      BATCH,
      BATCHES_IN_FLIGHT,
      (error) => !isConnectionError(error),
    );
    this.answerWithinMs = Math.max(1_000, Math.min(5_000, Math.floor(config.leaseMs / 3)));
  }

  /** Buffered executions stop waiting (shutdown): they stay pending for another worker. */
  stop(): void {
    this.stopping = true;
  }

  /**
   * Reads an execution's claim ahead of its slot's instant (a job that arrived before its
   * `fire_at`): see {@link claim}. Never rejects; null when the read failed or found nothing.
   */
  readEarly(id: string): Promise<EarlyRead | null> {
    return this.reads.run(id).then(
      (read) => read && { read, at: performance.now() },
      () => null,
    );
  }

  /**
   * Claims an attempt. With a read made early (during the hold before the slot's instant), a
   * judgement of that read, as of now, to run starts the attempt with one round trip after the
   * instant — the write re-checks everything the judgement relied on. Any other verdict is not
   * acted on from a read made early: the claim reads again.
   */
  async claim(request: ClaimRequest, early?: Promise<EarlyRead | null>): Promise<ClaimResult> {
    const ready = early && (await early);
    if (ready) {
      const now = new Date(ready.read.now.getTime() + performance.now() - ready.at);
      if (judgeClaim(claimContextOf(ready.read), now).kind === 'run') {
        const result = await this.write(request, ready.read);
        if (result !== 'again') return result;
      }
    }
    for (let round = 1; round <= MAX_ROUNDS; round += 1) {
      let read: ClaimRead | null;
      try {
        read = await answeredWithin(this.reads.run(request.id), this.answerWithinMs);
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        this.logger.warn({ executionId: request.id, err: error }, 'could not read the claim; the job comes back');
        return { kind: 'wait', taskId: null, retryInMs: UNREACHABLE_RETRY_MS };
      }
      if (!read) return { kind: 'lost' };
      const verdict = judgeClaim(claimContextOf(read), read.now);
      const result = await this.follow(verdict, read, request);
      if (result !== 'again') return result;
      if (round > 1) await sleep(5 * round);
    }
    return { kind: 'wait', taskId: null, retryInMs: 50 };
  }

  /** Does what a verdict says; `again` when the claim must read and judge once more. */
  private async follow(verdict: ClaimVerdict, read: ClaimRead, request: ClaimRequest): Promise<ClaimResult | 'again'> {
    const { execution, task } = read;
    switch (verdict.kind) {
      case 'run':
        return this.write(request, read);
      case 'skip': {
        const seen = { status: execution.status, attempt: execution.attempt, taskVersion: execution.taskVersion, task: task && { planVersion: task.planVersion, status: task.status } };
        if (!(await this.claims.skipUnstarted(execution.id, verdict.reason, seen))) return 'again';
        this.metrics.skipped.inc({ reason: verdict.reason });
        this.logger.log({ executionId: execution.id, task: execution.taskName, status: 'skipped', reason: verdict.reason }, 'execution skipped');
        return { kind: 'skipped', reason: verdict.reason };
      }
      case 'replace':
        for (const holderId of verdict.holderIds) {
          const cancelled = await this.executions.cancel(holderId, `replaced by ${execution.id}`);
          if (cancelled?.fromStatus === 'running') await this.redis.client.publish(this.redis.key(EXECUTION_CANCEL_CHANNEL), holderId);
          if (cancelled) this.logger.log({ executionId: holderId, replacedBy: execution.id }, 'execution cancelled: replaced');
        }
        return 'again';
      case 'buffer':
        if (this.stopping) return { kind: 'lost' };
        return (await this.claims.holdAsBuffered(execution.id, execution.taskId!)) ? { kind: 'wait', taskId: execution.taskId, retryInMs: BUFFER_POLL_MS } : 'again';
      case 'wait': {
        // The buffered slot asks again soon: the run it waits for may end on another worker.
        const buffered = execution.nextAttemptAt !== null && execution.status !== 'retrying';
        return { kind: 'wait', taskId: execution.taskId, retryInMs: verdict.retryInMs ?? (buffered ? BUFFER_POLL_MS : undefined) };
      }
      case 'early':
        // A few milliseconds early (the worker's clock, or a timer, a little ahead of Postgres'):
        // wait here rather than go back through the queue's delayed jobs.
        if (verdict.retryInMs > SHORT_EARLY_MS) return verdict;
        await sleep(verdict.retryInMs);
        return 'again';
      case 'late':
      case 'lost':
        return verdict;
    }
  }

  private async write(request: ClaimRequest, read: ClaimRead): Promise<ClaimResult | 'again'> {
    const { execution, task } = read;
    // Every worker takes jobs from the one queue: a run whose handler this worker lacks goes back
    // for a worker that offers it (one in the host app of PunctualWorkerModule, say), its row
    // untouched. When no live worker offers it, it is claimed here and ends dead, naming the handler.
    // (A retry pinned by an edit runs the handler it started with, which the read does not carry: it is claimed here.)
    if (!execution.pinned && !this.handlers.get(task!.handler) && (await this.offeredElsewhere(task!.handler))) {
      this.metrics.sentBack.inc({ handler: task!.handler });
      return { kind: 'wait', taskId: null };
    }
    const write: ClaimWrite = {
      ...request,
      seen: { status: execution.status, attempt: execution.attempt, fireAt: execution.fireAt, planVersion: task!.planVersion },
      // A newcomer of an exclusive task runs because nothing else of it was in progress or due first.
      free: execution.exclusive && execution.attempt === 0,
    };
    const flow = flowPolicyOf(task!);
    // A flow-controlled write waits its turn in its key's lane: given up on before its turn, it is never sent.
    let gaveUp = false;
    if (flow) write.abandoned = () => gaveUp;
    // The lease is counted from before the statement left: Postgres' lease ends no earlier.
    const sentAt = performance.now();
    let outcome: FlowClaimOutcome;
    try {
      outcome = await answeredWithin<FlowClaimOutcome>(flow ? this.flowClaim(write, flow) : this.writes.run(write), this.answerWithinMs, () => (gaveUp = true));
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      return this.confirm(request, error);
    }
    if (outcome.kind === 'held') {
      // Held for a permit, it is woken when the key moves; asking on its own is only the safety net.
      const retryInMs = outcome.retryInMs ?? Math.min(FLOW_POLL_MAX_MS, FLOW_POLL_MS + 250 * outcome.ahead);
      return { kind: 'wait', taskId: null, retryInMs, flow: { key: outcome.key, order: flowOrder(execution.fireAt.getTime(), execution.id) } };
    }
    if (outcome.kind !== 'claimed') return 'again';
    if (execution.heldAt) {
      this.metrics.flowWait.observe(Math.max(0, (outcome.execution.startedAt?.getTime() ?? read.now.getTime()) - execution.heldAt.getTime()) / 1000);
      // A held run went and the key still has room: the next one held behind it may go too.
      if (outcome.roomLeft && flow?.concurrency) void this.wakeFlow(flow.concurrency.key);
    }
    // The handler gets a copy of its own: it may change its task or payload.
    return { kind: 'claimed', execution: outcome.execution, task: withPinnedDefinition(structuredClone(task!), outcome.execution.pinnedDefinition), leaseValidUntil: sentAt + this.config.leaseMs };
  }

  /**
   * A flow-controlled claim: held at once (batched with others) when its keys are full, else
   * claimed in its lane under the keys' lock — straight there when the keys last had room.
   */
  private async flowClaim(write: ClaimWrite, flow: FlowPolicy): Promise<FlowClaimOutcome> {
    const held = this.flow.hadRoom(flow) ? null : await this.flowHolds.run({ write, flow });
    return held ?? (await this.flowLane(flow).run(write));
  }

  /** The lane of a flow control: one per keys-and-limits (forgotten all at once past a bound, as lanes are cheap to make). */
  private flowLane(flow: FlowPolicy): Batcher<ClaimWrite, FlowClaimOutcome> {
    const lane = JSON.stringify(flow);
    let batcher = this.flowLanes.get(lane);
    if (!batcher) {
      if (this.flowLanes.size >= FLOW_LANES_KEPT) this.flowLanes.clear();
      batcher = new Batcher(
        (writes) => this.flow.claimBatch(writes, flow, this.config.leaseMs),
        async (write) => (await this.flow.claimBatch([write], flow, this.config.leaseMs))[0]!,
        BATCH,
        1,
        (error) => !isConnectionError(error),
      );
      this.flowLanes.set(lane, batcher);
    }
    return batcher;
  }

  /** Whether a live worker of the cluster offers `handler` (read from Redis at most every OFFERED_FOR_MS). */
  private async offeredElsewhere(handler: string): Promise<boolean> {
    if (!this.offered || performance.now() - this.offered.at > OFFERED_FOR_MS) {
      const names = this.directory.handlers().then(
        (offered) => new Set(offered.map((h) => h.name)),
        (error: unknown) => {
          this.logger.warn({ err: error }, 'could not read which handlers the workers offer; runs of a handler missing here are run here (and end dead)');
          return new Set<string>();
        },
      );
      this.offered = { names, at: performance.now() };
    }
    return (await this.offered.names).has(handler);
  }

  /** Tells every worker that a run of `key` started or ended: each brings its first run held on the key forward. */
  async wakeFlow(key: string): Promise<void> {
    await this.redis.client.publish(this.redis.key(FLOW_WAKE_CHANNEL), key).catch((error: unknown) => this.logger.warn({ err: error, key }, 'could not announce a flow-control key; held runs ask again on their own'));
  }

  /**
   * The claim's answer was lost with its connection: it may have committed. Asks until Postgres
   * answers: a claim that did commit runs if enough of its lease is left, and is given back without
   * spending the attempt otherwise (its handler never started); one that did not is judged again.
   */
  private async confirm(request: ClaimRequest, cause: unknown): Promise<ClaimResult | 'again'> {
    this.logger.warn({ executionId: request.id, err: cause }, 'the claim lost its connection; asking whether it committed');
    const deadline = performance.now() + CONFIRM_FOR_MS;
    for (let wait = 100; ; wait = Math.min(1_000, wait * 2)) {
      await sleep(wait);
      let read: Awaited<ReturnType<ClaimsRepository['readClaimed']>>;
      try {
        read = await answeredWithin(this.claims.readClaimed(request.id), this.answerWithinMs);
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        // Still unreachable: if the claim did commit, its lease runs out and the reaper hands the slot on.
        if (performance.now() > deadline) return { kind: 'wait', taskId: null, retryInMs: UNREACHABLE_RETRY_MS };
        continue;
      }
      const e = read?.execution;
      if (!read || !e || e.status !== 'running' || e.attemptId !== request.attemptId) return 'again';
      const leftMs = (e.leaseUntil?.getTime() ?? 0) - read.now.getTime();
      if (read.task && leftMs >= this.config.leaseMs * MIN_LEASE_LEFT_FRACTION) {
        return { kind: 'claimed', execution: e, task: withPinnedDefinition(read.task, e.pinnedDefinition), leaseValidUntil: performance.now() + leftMs };
      }
      await this.claims.giveBack(e.id, request.attemptId, 'the claim was confirmed too late to run within its lease');
      return 'again';
    }
  }
}
