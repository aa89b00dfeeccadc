import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { bestEffort } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import { RedisService } from '@punctual/redis';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EXECUTION_JOB_OPTIONS, EXECUTIONS_QUEUE, type ExecutionJobData, executionJobId, groupJobId, groupsKey, turnJobId } from './queue.constants.js';

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
}

/**
 * Producer side of the executions queue. Every job carries the active trace context (when tracing
 * is on), so the attempt that runs it joins the trace of whatever queued it.
 */
@Injectable()
export class ExecutionsQueue implements OnApplicationShutdown {
  readonly queue: Queue<ExecutionJobData>;
  /** The queue's own connection, also for the relay's reads of job hashes. */
  private readonly connection: Redis;

  constructor(redis: RedisService) {
    this.connection = redis.connect();
    this.queue = new Queue<ExecutionJobData>(EXECUTIONS_QUEUE, {
      connection: this.connection,
      prefix: redis.prefix,
      defaultJobOptions: EXECUTION_JOB_OPTIONS,
    });
  }

  /**
   * Pushes executions as immediate jobs in one round trip; an id already queued is not added twice.
   * Each job carries its `fire_at`, which a worker that receives it early waits for, and the
   * instant it was released (`releasedAt`, the cluster's clock).
   */
  async enqueueNow(executions: { id: string; fireAt: Date; taskId?: string }[], releasedAt: number): Promise<void> {
    if (executions.length === 0) return;
    const trace = tracing.current();
    await this.queue.addBulk(
      executions.map(({ id, fireAt, taskId }) => ({
        name: 'execution',
        data: { executionId: id, taskId, fireAt: fireAt.getTime(), releasedAt, trace },
        opts: { jobId: executionJobId(id) },
      })),
    );
  }

  /**
   * Pushes fire groups — executions due at the same instant, several to a job (see
   * ExecutionJobData.group) — and records which group each execution rides in (see groupsKey),
   * both in one round trip. Each job carries the instant and the release, as a job of one does.
   */
  async enqueueGroups(groups: { fireAt: Date; executions: { id: string; taskId?: string }[] }[], releasedAt: number): Promise<void> {
    if (groups.length === 0) return;
    const trace = tracing.current();
    const jobs = groups.map((g) => {
      const members = g.executions.map((e) => ({ executionId: e.id, taskId: e.taskId }));
      return {
        name: 'executions',
        data: { executionId: members[0]!.executionId, taskId: members[0]!.taskId, fireAt: g.fireAt.getTime(), releasedAt, trace, group: members },
        opts: { jobId: groupJobId(g.fireAt.getTime(), members[0]!.executionId) },
      };
    });
    // Membership first: a relay that finds an execution without a job of its own finds its group.
    const pipeline = this.connection.pipeline();
    for (const job of jobs) {
      const key = this.queue.toKey(groupsKey(job.data.fireAt));
      pipeline.hset(key, Object.fromEntries(job.data.group.map((m) => [m.executionId, job.opts.jobId])));
      pipeline.expire(key, GROUP_MEMBERSHIP_TTL_S);
    }
    await execOrThrow(pipeline);
    await this.queue.addBulk(jobs);
  }

  /** Forgets the members of a fire group that ended (best effort: the membership expires anyway). */
  async forgetGroup(fireAtMs: number, executionIds: string[]): Promise<void> {
    if (executionIds.length) await this.connection.hdel(this.queue.toKey(groupsKey(fireAtMs)), ...executionIds);
  }

  /** Schedules a later attempt of an execution (a retry after backoff). */
  async enqueueAttempt(executionId: string, attempt: number, delayMs: number, taskId?: string): Promise<void> {
    await this.queue.add('execution', { executionId, taskId, trace: tracing.current() }, { jobId: executionJobId(executionId, attempt), delay: Math.max(0, delayMs) });
  }

  /**
   * Pushes the jobs of slots handed their turn, at the head of the queue (LIFO): the run ahead of
   * each just ended, and the slot goes next rather than behind a backlog — the task's later slots,
   * further back in the queue, then find it done instead of waiting behind it in turn.
   */
  async enqueueTurns(turns: TurnJob[]): Promise<void> {
    if (turns.length === 0) return;
    const trace = tracing.current();
    await this.queue.addBulk(
      turns.map((t) => {
        const attempt = t.status === 'retrying' ? t.attempt + 1 : 1;
        return { name: 'execution', data: { executionId: t.id, taskId: t.taskId, trace }, opts: { jobId: turnJobId(t.id, attempt, t.handedMs), lifo: true } };
      }),
    );
  }

  /**
   * Makes sure the job of an execution's attempt is in the queue (after Redis lost data, or after
   * a job ended without its execution ending). Returns true when it had to add it again.
   */
  async ensureJob(executionId: string, attempt: number): Promise<boolean> {
    if ((await this.withoutJob([{ executionId, attempt }])).length === 0) return false;
    await this.addAgain(executionId, attempt);
    return true;
  }

  /**
   * Of these attempts, the ones with no job waiting, delayed or running: none at all, or one that
   * already ended (a finished job keeps its hash only while retained, with `finishedOn` set). One
   * pipeline of constant-time reads of the jobs' own hashes — never BullMQ's `getState`, which
   * scans the wait list for each job (a cost that grows with the backlog the relay is checking).
   */
  async withoutJob<T extends { executionId: string; attempt: number; fireAt?: Date }>(attempts: T[]): Promise<T[]> {
    const missing = await this.notLive(attempts.map((a) => executionJobId(a.executionId, a.attempt)));
    const orphans = attempts.filter((_, i) => missing[i]);
    // A first attempt fired in a group rides in the group's job: it has a job if that one lives.
    const grouped = orphans.filter((a) => a.attempt === 1 && a.fireAt);
    if (grouped.length === 0) return orphans;
    const lookup = this.connection.pipeline();
    for (const a of grouped) lookup.hget(this.queue.toKey(groupsKey(a.fireAt!.getTime())), a.executionId);
    const groupIds = (await execOrThrow(lookup)) as (string | null)[];
    const named = grouped.flatMap((a, i) => (groupIds[i] ? [{ a, jobId: groupIds[i]! }] : []));
    const groupMissing = await this.notLive(named.map((n) => n.jobId));
    const riding = new Set(named.filter((_, i) => !groupMissing[i]).map((n) => n.a));
    return orphans.filter((a) => !riding.has(a));
  }

  /**
   * For each job id, whether no job lives under it: none at all, or one that already ended (a
   * finished job keeps its hash only while retained, with `finishedOn` set). One pipeline of
   * constant-time reads of the jobs' own hashes.
   */
  private async notLive(jobIds: string[]): Promise<boolean[]> {
    if (jobIds.length === 0) return [];
    const pipeline = this.connection.pipeline();
    for (const id of jobIds) pipeline.hmget(this.queue.toKey(id), 'timestamp', 'finishedOn');
    const answers = (await execOrThrow(pipeline)) as [string | null, string | null][];
    return answers.map(([timestamp, finishedOn]) => timestamp === null || finishedOn !== null);
  }

  /**
   * Adds an attempt's job again, replacing one that already ended. A first attempt's job carries
   * the row's `fire_at` (a worker holds it until then: an edit may have moved it past the instant
   * of the job it replaces) and the instant of this release.
   */
  async addAgain(executionId: string, attempt: number, first?: { fireAt: Date; releasedAt: number }, taskId?: string): Promise<void> {
    const jobId = executionJobId(executionId, attempt);
    await bestEffort(this.queue.remove(jobId), 'queue.remove-ended-job');
    const timing = first ? { fireAt: first.fireAt.getTime(), releasedAt: first.releasedAt } : {};
    await this.queue.add('execution', { executionId, taskId, ...timing, trace: tracing.current() }, { jobId });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}

/** The answers of a pipeline, in order; the first error of any command is thrown. */
async function execOrThrow(pipeline: ReturnType<Redis['pipeline']>): Promise<unknown[]> {
  const answers = (await pipeline.exec()) ?? [];
  return answers.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}
