import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { bestEffort } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import { RedisService, type RedisConnection } from '@punctual/redis';
import { type JobType, Queue } from 'bullmq';
import {
  EXECUTION_JOB,
  EXECUTION_JOB_OPTIONS,
  type ExecutionJobData,
  executionJobId,
  executionsQueueName,
  groupJobId,
  groupsKey,
  turnJobId,
} from './queue.constants.js';

/**
 * How long a fire group's membership is kept: the worker that ends a group deletes its members, so
 * this only bounds what a worker that died with a group in hand leaves behind.
 */
const GROUP_MEMBERSHIP_TTL_S = 24 * 3600;

/** A slot handed its turn (see TurnsRepository in @punctual/db): its job goes first. */
export interface TurnJob {
  id: string;
  taskId: string;
  status: 'scheduled' | 'queued' | 'retrying';
  attempt: number;
  handedMs: number;
  /** The handler the slot runs: its job goes to that handler's queue. */
  handler: string;
}

/** An execution pushed now: its instant, its task, and the handler whose queue takes it. */
export interface ReleasedExecution {
  id: string;
  fireAt: Date;
  taskId?: string;
  handler: string;
  /** A backlog run (a catch-up, a backfill): its job waits behind every on-time job (see {@link BACKLOG_PRIORITY}). */
  backlog?: boolean;
}

/**
 * The BullMQ priority of a backlog run's job. A worker takes a queue's jobs without a priority first
 * (BullMQ's wait list) and prioritized ones only when none is waiting, so a slot on its schedule is
 * never behind a catch-up that its turn of `CATCHUP_RATE` put in the queue a moment before.
 */
export const BACKLOG_PRIORITY = 1;

/** BullMQ's job counts by state, summed over the queues asked about. */
export type JobCounts = Record<string, number>;

/**
 * Producer side of the executions queues — one per handler (see {@link executionsQueueName}): every
 * job goes to the queue of the handler its run runs, so only workers that offer it take it. Every
 * job carries the active trace context (when tracing is on), so the attempt that runs it joins the
 * trace of whatever queued it.
 */
@Injectable()
export class ExecutionsQueue implements OnApplicationShutdown {
  /** The queues of this process, by handler: made on first use, sharing one connection. */
  private readonly queues = new Map<string, Queue<ExecutionJobData>>();
  /** The queues' own connection, also for the relay's reads of job hashes. */
  private readonly connection: RedisConnection;
  private readonly prefix: string;

  constructor(redis: RedisService) {
    this.connection = redis.connect();
    this.prefix = redis.prefix;
  }

  /** The queue of the runs of `handler`. */
  queueFor(handler: string): Queue<ExecutionJobData> {
    let queue = this.queues.get(handler);
    if (!queue) {
      queue = new Queue<ExecutionJobData>(executionsQueueName(handler), {
        connection: this.connection,
        prefix: this.prefix,
        defaultJobOptions: EXECUTION_JOB_OPTIONS,
      });
      this.queues.set(handler, queue);
    }
    return queue;
  }

  /** BullMQ's job counts by state over the queues of `handlers` (waiting, active, delayed, prioritized, failed…). */
  async jobCounts(handlers: Iterable<string>, ...states: JobType[]): Promise<JobCounts> {
    const counts: JobCounts = {};
    for (const each of await Promise.all([...new Set(handlers)].map((h) => this.queueFor(h).getJobCounts(...states)))) {
      for (const [state, n] of Object.entries(each)) counts[state] = (counts[state] ?? 0) + n;
    }
    for (const state of states) counts[state] ??= 0;
    return counts;
  }

  /**
   * Pushes executions as immediate jobs, each to its handler's queue, in one round trip per
   * handler; an id already queued is not added twice. Each job carries its `fire_at`, which a
   * worker that receives it early waits for, and the instant it was released (`releasedAt`, the
   * cluster's clock).
   */
  async pushNow(executions: ReleasedExecution[], releasedAt: number): Promise<void> {
    if (executions.length === 0) return;
    const trace = tracing.current();
    await Promise.all(
      [...byHandler(executions)].map(([handler, list]) =>
        this.queueFor(handler).addBulk(
          list.map(({ id, fireAt, taskId, backlog }) => ({
            name: EXECUTION_JOB,
            data: { executionId: id, taskId, fireAt: fireAt.getTime(), releasedAt, trace },
            opts: { jobId: executionJobId(id), ...(backlog ? { priority: BACKLOG_PRIORITY } : {}) },
          })),
        ),
      ),
    );
  }

  /**
   * Pushes fire groups — executions of one handler due at the same instant, several to a job (see
   * ExecutionJobData.group) — and records which group each execution rides in (see groupsKey),
   * both in one round trip per handler. Each job carries the instant and the release, as a job of one does.
   */
  async pushGroups(
    groups: { fireAt: Date; handler: string; backlog?: boolean; executions: { id: string; taskId?: string }[] }[],
    releasedAt: number,
  ): Promise<void> {
    if (groups.length === 0) return;
    const trace = tracing.current();
    const jobs = groups.map((g) => {
      const members = g.executions.map((e) => ({ executionId: e.id, taskId: e.taskId }));
      return {
        handler: g.handler,
        name: 'executions',
        data: {
          executionId: members[0]!.executionId,
          taskId: members[0]!.taskId,
          fireAt: g.fireAt.getTime(),
          releasedAt,
          trace,
          group: members,
        },
        opts: {
          jobId: groupJobId(g.fireAt.getTime(), members[0]!.executionId),
          ...(g.backlog ? { priority: BACKLOG_PRIORITY } : {}),
        },
      };
    });
    // Membership first: a relay that finds an execution without a job of its own finds its group.
    const pipeline = this.connection.pipeline();
    for (const job of jobs) {
      const key = this.queueFor(job.handler).toKey(groupsKey(job.data.fireAt));
      pipeline.hset(key, Object.fromEntries(job.data.group.map((m) => [m.executionId, job.opts.jobId])));
      pipeline.expire(key, GROUP_MEMBERSHIP_TTL_S);
    }
    await execOrThrow(pipeline);
    await Promise.all(
      [...byHandler(jobs)].map(([handler, list]) =>
        this.queueFor(handler).addBulk(list.map(({ name, data, opts }) => ({ name, data, opts }))),
      ),
    );
  }

  /** Forgets the members of a fire group that ended (best effort: the membership expires anyway). */
  async forgetGroup(handler: string, fireAtMs: number, executionIds: string[]): Promise<void> {
    if (executionIds.length)
      await this.connection.hdel(this.queueFor(handler).toKey(groupsKey(fireAtMs)), ...executionIds);
  }

  /** Schedules a later attempt of an execution (a retry after backoff) on its handler's queue. */
  async pushAttempt(
    handler: string,
    executionId: string,
    attempt: number,
    delayMs: number,
    taskId?: string,
  ): Promise<void> {
    await this.queueFor(handler).add(
      EXECUTION_JOB,
      { executionId, taskId, trace: tracing.current() },
      { jobId: executionJobId(executionId, attempt), delay: Math.max(0, delayMs) },
    );
  }

  /**
   * Pushes the jobs of slots handed their turn, at the head of their queues (LIFO): the run ahead of
   * each just ended, and the slot goes next rather than behind a backlog — the task's later slots,
   * further back in the queue, then find it done instead of waiting behind it in turn.
   */
  async pushTurns(turns: TurnJob[]): Promise<void> {
    if (turns.length === 0) return;
    const trace = tracing.current();
    await Promise.all(
      [...byHandler(turns)].map(([handler, list]) =>
        this.queueFor(handler).addBulk(
          list.map((t) => {
            const attempt = t.status === 'retrying' ? t.attempt + 1 : 1;
            return {
              name: EXECUTION_JOB,
              data: { executionId: t.id, taskId: t.taskId, trace },
              opts: { jobId: turnJobId(t.id, attempt, t.handedMs), lifo: true },
            };
          }),
        ),
      ),
    );
  }

  /**
   * Makes sure the job of an execution's attempt is in its handler's queue (after Redis lost data,
   * or after a job ended without its execution ending). Returns true when it had to add it again.
   */
  async ensureJob(handler: string, executionId: string, attempt: number): Promise<boolean> {
    if ((await this.withoutJob([{ handler, executionId, attempt }])).length === 0) return false;
    await this.addAgain(handler, executionId, attempt);
    return true;
  }

  /**
   * Of these attempts, the ones with no job waiting, delayed or running in their handler's queue:
   * none at all, or one that already ended (a finished job keeps its hash only while retained, with
   * `finishedOn` set). One pipeline of constant-time reads of the jobs' own hashes — never BullMQ's
   * `getState`, which scans the wait list for each job (a cost that grows with the backlog the
   * relay is checking).
   */
  async withoutJob<T extends { handler: string; executionId: string; attempt: number; fireAt?: Date }>(
    attempts: T[],
  ): Promise<T[]> {
    const missing = await this.notLive(
      attempts.map((a) => this.queueFor(a.handler).toKey(executionJobId(a.executionId, a.attempt))),
    );
    const orphans = attempts.filter((_, i) => missing[i]);
    // A first attempt fired in a group rides in the group's job: it has a job if that one lives.
    const grouped = orphans.filter((a) => a.attempt === 1 && a.fireAt);
    if (grouped.length === 0) return orphans;
    const lookup = this.connection.pipeline();
    for (const a of grouped) lookup.hget(this.queueFor(a.handler).toKey(groupsKey(a.fireAt!.getTime())), a.executionId);
    const groupIds = (await execOrThrow(lookup)) as (string | null)[];
    const named = grouped.flatMap((a, i) =>
      groupIds[i] ? [{ a, key: this.queueFor(a.handler).toKey(groupIds[i]!) }] : [],
    );
    const groupMissing = await this.notLive(named.map((n) => n.key));
    const riding = new Set(named.filter((_, i) => !groupMissing[i]).map((n) => n.a));
    return orphans.filter((a) => !riding.has(a));
  }

  /**
   * For each job key, whether no job lives under it: none at all, or one that already ended (a
   * finished job keeps its hash only while retained, with `finishedOn` set). One pipeline of
   * constant-time reads of the jobs' own hashes.
   */
  private async notLive(jobKeys: string[]): Promise<boolean[]> {
    if (jobKeys.length === 0) return [];
    const pipeline = this.connection.pipeline();
    for (const key of jobKeys) pipeline.hmget(key, 'timestamp', 'finishedOn');
    const answers = (await execOrThrow(pipeline)) as [string | null, string | null][];
    return answers.map(([timestamp, finishedOn]) => timestamp === null || finishedOn !== null);
  }

  /**
   * Adds an attempt's job again to its handler's queue, replacing one that already ended. A first
   * attempt's job carries the row's `fire_at` (a worker holds it until then: an edit may have moved
   * it past the instant of the job it replaces) and the instant of this release.
   */
  async addAgain(
    handler: string,
    executionId: string,
    attempt: number,
    first?: { fireAt: Date; releasedAt: number },
    taskId?: string,
  ): Promise<void> {
    const queue = this.queueFor(handler);
    const jobId = executionJobId(executionId, attempt);
    await bestEffort(queue.remove(jobId), 'queue.remove-ended-job');
    const timing = first ? { fireAt: first.fireAt.getTime(), releasedAt: first.releasedAt } : {};
    await queue.add(EXECUTION_JOB, { executionId, taskId, ...timing, trace: tracing.current() }, { jobId });
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}

/** Items by the handler whose queue takes them, in their order. */
function byHandler<T extends { handler: string }>(items: T[]): Map<string, T[]> {
  const lists = new Map<string, T[]>();
  for (const item of items) {
    let list = lists.get(item.handler);
    if (!list) lists.set(item.handler, (list = []));
    list.push(item);
  }
  return lists;
}

/** The answers of a pipeline, in order; the first error of any command is thrown. */
async function execOrThrow(pipeline: ReturnType<RedisConnection['pipeline']>): Promise<unknown[]> {
  const answers = (await pipeline.exec()) ?? [];
  return answers.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}
