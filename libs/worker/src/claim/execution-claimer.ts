import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import {
  type ClaimAnswer,
  type ClaimRead,
  ClaimsRepository,
  type ClaimWrite,
  ExecutionTransitionsRepository,
  FlowControlRepository,
  isConnectionError,
  TurnsRepository,
} from '@punctual/db';
import { HandlerRegistry } from '@punctual/handlers';
import { Metrics } from '@punctual/metrics';
import { reasonOfSkip } from '@punctual/contract';
import {
  type ClaimContext,
  type ClaimVerdict,
  flowOrder,
  judgeClaim,
  quotaFlowKey,
  withPinnedDefinition,
} from '@punctual/planning';
import { EXECUTION_CANCEL_CHANNEL } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { ClaimBatches } from './claim-batches.js';
import { answeredWithin, ClaimConfirmation, UNREACHABLE_RETRY_MS } from './claim-confirmation.js';
import type { ClaimRequest, Disposition } from './disposition.js';
import { FlowClaims, flowPolicyOf } from './flow-claims.js';
import { leasePolicy, type LeasePolicy } from '../run/lease-policy.js';
import { TurnHandover } from './turn-handover.js';

/** Reads and writes of one claim before a job that keeps losing races is told to come back later. */
const MAX_ROUNDS = 8;
/** A claim this close to its `fire_at` waits for it in place; one further off comes back through the queue. */
const SHORT_EARLY_MS = 100;
/**
 * A run held for a permit comes back when a run of its key ends, or a held one starts and leaves
 * room (on any worker); without that word it asks again after this, later the more runs wait ahead
 * of it — a safety net (a word lost with Redis), not the pace.
 */
const FLOW_POLL_MS = 1_000;
const FLOW_POLL_MAX_MS = 15_000;
/**
 * A skip for overlap refused twice in one claim: the run it overlaps has its row locked (its outcome
 * being written, see ClaimsRepository.skipUnstarted). The claim comes back after this rather than
 * re-reading while the write waits.
 */
const LOCKED_RUN_RETRY_MS = 250;
/** A first attempt found late is decided by the leader's misfire pass, which runs every 2 s: ask again after it. */
const LATE_RECHECK_MS = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What the judgement reads of a claim's snapshot: the task as the execution runs it (an edit that
 * pinned the execution's definition keeps its attempts, say, for the takeover of an expired lease).
 */
export function claimContextOf(read: ClaimRead): ClaimContext {
  const { execution: e } = read;
  const task =
    read.task && e.pinnedMaxAttempts !== null ? { ...read.task, maxAttempts: e.pinnedMaxAttempts } : read.task;
  return {
    slot: {
      status: e.status,
      attempt: e.attempt,
      trigger: e.trigger,
      scheduledFor: e.scheduledFor,
      fireAt: e.fireAt,
      exclusive: e.exclusive,
      taskVersion: e.taskVersion,
      pinned: e.pinned,
      leaseUntil: e.leaseUntil,
      nextAttemptAt: e.nextAttemptAt,
      heldAt: e.heldAt,
    },
    task,
    runsInProgress: read.runsInProgress,
    earlierDue: read.earlierDue,
    otherBuffered: read.otherBuffered,
    previousSlotAt: read.previousSlotAt,
  };
}

/**
 * Claims attempts (DESIGN §5): the claim of an execution ends in one {@link Disposition}. First the
 * one-statement claim, which starts every attempt the judgement would start without asking it —
 * the common case, one round trip. Only a claim it did not start is read and judged by
 * `judgeClaim`, and the verdict is followed: the fenced write of a claim allowed (the flow-control
 * lane for a task with keys), a slot parked until its turn, a skip, a buffer mark, the cancel of a
 * run a newcomer replaces — reading again whenever a write finds the world changed since the read.
 */
@Injectable()
export class ExecutionClaimer {
  private readonly logger = new Logger(ExecutionClaimer.name);
  private stopping = false;
  private readonly lease: LeasePolicy;
  private readonly batches: ClaimBatches;
  private readonly flowClaims: FlowClaims;
  private readonly confirmation: ClaimConfirmation;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly claims: ClaimsRepository,
    private readonly executions: ExecutionTransitionsRepository,
    flow: FlowControlRepository,
    private readonly turns: TurnsRepository,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
    private readonly handlers: HandlerRegistry,
    private readonly handover: TurnHandover,
  ) {
    this.lease = leasePolicy(config);
    this.batches = new ClaimBatches(claims, turns, { leaseMs: config.leaseMs, handlers: () => handlers.names() });
    this.flowClaims = new FlowClaims(flow, redis, config.leaseMs, this.logger);
    this.confirmation = new ClaimConfirmation(claims, this.lease, this.logger);
  }

  /** Buffered executions stop waiting (shutdown): they stay pending for another worker. */
  stop(): void {
    this.stopping = true;
  }

  /** Claims an attempt of the request's execution: what becomes of it and of its job. Counted by verdict. */
  async claim(request: ClaimRequest): Promise<Disposition> {
    const disposition = await this.decide(request);
    this.metrics.claims.inc({ verdict: disposition.kind });
    return disposition;
  }

  private async decide(request: ClaimRequest): Promise<Disposition> {
    const sentAt = performance.now();
    // Given up on before it leaves (queued behind slow batches), the claim is never sent.
    let gaveUp = false;
    try {
      const answer = await answeredWithin(
        this.batches.direct.run({ ...request, abandoned: () => gaveUp }),
        this.lease.answerWithinMs,
        () => (gaveUp = true),
      );
      const disposition = this.settle(answer, sentAt);
      if (disposition) return disposition;
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      const confirmed = await this.confirmation.confirm(request, error);
      if (confirmed) return confirmed;
    }
    for (let round = 1; round <= MAX_ROUNDS; round += 1) {
      let read: ClaimRead | null;
      try {
        read = await answeredWithin(
          this.batches.reads.run({ id: request.id, taskId: request.taskId }),
          this.lease.answerWithinMs,
        );
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        this.logger.warn({ executionId: request.id, err: error }, 'could not read the claim; the job comes back');
        return { kind: 'later', why: 'unreachable', afterMs: UNREACHABLE_RETRY_MS };
      }
      if (!read) return { kind: 'dropped', why: 'lost' };
      this.metrics.claimReads.inc();
      // This claim's own statement, given up on, committed meanwhile: the attempt is this one's —
      // run it while enough of its lease is left, else give it back unspent (never judge it `lost`).
      if (read.execution.status === 'running' && read.execution.attemptId === request.attemptId) {
        const confirmed = await this.confirmation.confirm(request, 'its own claim committed after it was given up on');
        if (confirmed) return confirmed;
        continue;
      }
      const disposition = await this.carryOut(judgeClaim(claimContextOf(read), read.now), read, request, round);
      if (disposition) return disposition;
      if (round > 1) await sleep(5 * round);
    }
    return { kind: 'later', why: 'contended', afterMs: 50 };
  }

  /**
   * What a claim statement's answer comes to; null when the claim must read and judge (again).
   * `sentBy`: when the statement may have left at the earliest — a started attempt's lease is counted
   * from it (Postgres' lease ends no earlier). `read`: the claim's read, for a write (its task's
   * definition, and what a run held by flow control waits for).
   */
  private settle(answer: ClaimAnswer, sentBy: number, read?: ClaimRead): Disposition | null {
    switch (answer.kind) {
      case 'started': {
        const { execution } = answer;
        const task = answer.task ?? read!.task!;
        return {
          kind: 'run',
          execution,
          task: withPinnedDefinition(task, execution.pinnedDefinition),
          leaseValidUntil: sentBy + this.lease.leaseMs,
        };
      }
      case 'held': {
        // Held for a permit, it is woken when the key moves; asking on its own is only the safety net.
        const { fireAt, id } = read!.execution;
        return {
          kind: 'later',
          why: 'held',
          afterMs: answer.retryInMs ?? Math.min(FLOW_POLL_MAX_MS, FLOW_POLL_MS + 250 * answer.ahead),
          waitsFor: { flowKey: answer.key, order: flowOrder(fireAt.getTime(), id) },
        };
      }
      case 'parked':
        return { kind: 'parked' };
      case 'again':
        return null;
    }
  }

  /** Parks the slot read until its turn comes (see TurnsRepository.park). */
  private park(read: ClaimRead, request: ClaimRequest): Promise<ClaimAnswer> {
    const { execution } = read;
    return this.batches.parks.run({
      id: execution.id,
      status: execution.status,
      attempt: execution.attempt,
      releasedAt: request.releasedAt,
    });
  }

  /** Does what a verdict says; null when the claim must read and judge once more. */
  private async carryOut(
    verdict: ClaimVerdict,
    read: ClaimRead,
    request: ClaimRequest,
    round: number,
  ): Promise<Disposition | null> {
    const { execution, task } = read;
    switch (verdict.kind) {
      case 'run':
        return this.write(request, read);
      case 'park':
        return this.settle(await this.park(read, request), 0);
      case 'skip': {
        const seen = {
          status: execution.status,
          attempt: execution.attempt,
          taskVersion: execution.taskVersion,
          task: task && { planVersion: task.planVersion, status: task.status },
        };
        if (!(await this.claims.skipUnstarted(execution.id, verdict.reason, seen)))
          return verdict.reason === 'overlap' && round > 1
            ? { kind: 'later', why: 'contended', afterMs: LOCKED_RUN_RETRY_MS }
            : null;
        this.metrics.skipped.inc({ reason: verdict.reason });
        this.metrics.slotsDecided('skipped', reasonOfSkip(verdict.reason) ?? verdict.reason);
        this.logger.log(
          { executionId: execution.id, task: execution.taskName, status: 'skipped', reason: verdict.reason },
          'execution skipped',
        );
        // A slot behind this one may be parked: its turn has come.
        if (execution.exclusive && execution.taskId) await this.handover.handOverAndPush([execution.taskId]);
        return { kind: 'skipped', reason: verdict.reason };
      }
      case 'replace':
        for (const holderId of verdict.holderIds) {
          const cancelled = await this.executions.cancel(holderId, `replaced by ${execution.id}`);
          if (cancelled?.fromStatus === 'running')
            await this.redis.client.publish(this.redis.key(EXECUTION_CANCEL_CHANNEL), holderId);
          if (cancelled) {
            this.metrics.slotsDecided('cancelled', 'overlap');
            this.logger.log({ executionId: holderId, replacedBy: execution.id }, 'execution cancelled: replaced');
          }
        }
        return null;
      case 'buffer':
        if (this.stopping) return { kind: 'dropped', why: 'released' };
        // The one slot waiting behind the run in progress: marked, then parked like any slot whose turn has not come.
        if (!(await this.turns.markBuffered(execution.id, execution.taskId!))) return null;
        return this.settle(await this.park(read, request), 0);
      case 'wait':
        // A run ahead released late (a failover adopted it): judged by the overlap policy only once
        // it has waited as long. Parked meanwhile, so that the end of the run ahead hands it its turn
        // at once (the common case: that run is short); its job comes back at the end of the wait too.
        if ((await this.park(read, request)).kind !== 'parked') return null;
        return {
          kind: 'later',
          why: 'allowance',
          afterMs: verdict.retryInMs,
          waitsFor: execution.taskId ? { taskId: execution.taskId } : undefined,
        };
      case 'early':
        // A few milliseconds early (the worker's clock, or a timer, a little ahead of Postgres'):
        // wait here rather than go back through the queue's delayed jobs.
        if (verdict.retryInMs > SHORT_EARLY_MS) return { kind: 'later', why: 'early', afterMs: verdict.retryInMs };
        await sleep(verdict.retryInMs);
        return null;
      case 'late':
        return { kind: 'later', why: 'late', afterMs: LATE_RECHECK_MS };
      case 'lost':
        return { kind: 'dropped', why: 'lost' };
    }
  }

  /** The fenced write of a claim the judgement allowed, as read: plain (batched) or in its flow-control lane. */
  private async write(request: ClaimRequest, read: ClaimRead): Promise<Disposition | null> {
    const { execution } = read;
    const task = read.task!;
    // A job is pushed to the queue of the handler its run runs, and a worker takes jobs only from
    // the queues of handlers it offers: a run whose handler this worker lacks had its handler
    // changed after its job was pushed (an edit). It moves to that handler's queue, its row
    // untouched, and waits there for a worker that offers it — never ended for want of one.
    const handler = execution.pinnedHandler ?? task.handler;
    if (!this.handlers.get(handler)) {
      this.metrics.runMoved(handler);
      return { kind: 'moved', handler, attempt: execution.status === 'retrying' ? execution.attempt + 1 : 1 };
    }
    const write: ClaimWrite = {
      ...request,
      seen: {
        status: execution.status,
        attempt: execution.attempt,
        fireAt: execution.fireAt,
        planVersion: task.planVersion,
      },
      // A newcomer of an exclusive task runs because nothing else of it was in progress or due first.
      free: execution.exclusive && execution.attempt === 0,
    };
    const flow = flowPolicyOf(task, read.quota);
    // A write waits for its batch (a flow-controlled one for its turn in its key's lane): given up on
    // before it leaves, it is never sent.
    let gaveUp = false;
    write.abandoned = () => gaveUp;
    const sentAt = performance.now();
    let answer: ClaimAnswer;
    try {
      answer = await answeredWithin<ClaimAnswer>(
        flow ? this.flowClaims.claim(write, flow) : this.batches.writes.run(write),
        this.lease.answerWithinMs,
        () => (gaveUp = true),
      );
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      return this.confirmation.confirm(request, error);
    }
    if (answer.kind === 'started' && execution.heldAt) {
      this.metrics.flowWait.observe(
        Math.max(0, (answer.execution.startedAt?.getTime() ?? read.now.getTime()) - execution.heldAt.getTime()) / 1000,
      );
      // A held run went and the key still has room: the next one held behind it may go too.
      // A wake never rejects (a failed announcement is logged), and the claim does not wait for it.
      if (answer.roomLeft && flow?.concurrency) void this.flowClaims.wake(flow.concurrency.key);
      if (answer.roomLeft && flow?.quota?.concurrency != null)
        void this.flowClaims.wake(quotaFlowKey(flow.quota.namespace));
    }
    return this.settle(answer, sentAt, read);
  }

  /** Tells every worker that a run of `key` started or ended: each brings its first run held on the key forward. */
  wakeFlow(key: string): Promise<void> {
    return this.flowClaims.wake(key);
  }
}
