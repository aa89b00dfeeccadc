import { Injectable } from '@nestjs/common';
import { ExecutionQueriesRepository } from '@punctual/db';
import type { Metrics } from '@punctual/metrics';
import { ExecutionsQueue, type JobCounts } from '@punctual/queue';
import type { JobType } from 'bullmq';
import { WorkerDirectory } from './worker-directory.js';

/** How long the list of handlers whose queues may hold jobs is kept before it is read again. */
const KNOWN_FOR_MS = 15_000;

/**
 * The executions queues there are — one per handler (see executionsQueueName): a handler's queue
 * may hold jobs when a live worker offers it, a task names it, or an unfinished run is pinned to
 * it. Counts their jobs, and tells which handlers' due runs wait because no live worker offers them.
 */
@Injectable()
export class HandlerQueues {
  private known: { names: Promise<string[]>; at: number } | null = null;

  constructor(
    private readonly directory: WorkerDirectory,
    private readonly executions: ExecutionQueriesRepository,
    private readonly queue: ExecutionsQueue,
  ) {}

  /** Every handler whose queue may hold jobs, as read at most `maxAgeMs` ago (default KNOWN_FOR_MS). */
  async handlers(maxAgeMs = KNOWN_FOR_MS): Promise<string[]> {
    if (!this.known || performance.now() - this.known.at > maxAgeMs) {
      const names = Promise.all([this.executions.handlersInUse(), this.directory.handlers()]).then(([used, offered]) =>
        [...new Set([...used, ...offered.map((h) => h.name)])].sort(),
      );
      // A failed read is not kept: the next asks again.
      this.known = {
        names: names.catch((error: unknown) => ((this.known = null), Promise.reject(error))),
        at: performance.now(),
      };
    }
    return this.known.names;
  }

  /** BullMQ's job counts by `states`, summed over every handler's queue (the list read at most `maxAgeMs` ago). */
  async jobCounts(states: JobType[], maxAgeMs = KNOWN_FOR_MS): Promise<JobCounts> {
    return this.queue.jobCounts(await this.handlers(maxAgeMs), ...states);
  }

  /**
   * Due runs (planned past their `fire_at`, or retries past their backoff) by handler, for the
   * handlers no live worker offers: they wait in their handler's queue until a worker that offers it
   * starts. With `namespaces`, only those namespaces' runs.
   */
  async waitingForWorker(
    namespaces: readonly string[] | null = null,
  ): Promise<{ handler: string; runs: number; since: Date }[]> {
    const [due, offered] = await Promise.all([this.executions.dueByHandler(namespaces), this.directory.handlers()]);
    const names = new Set(offered.map((h) => h.name));
    return due.filter((d) => !names.has(d.handler));
  }

  /**
   * Sets the leader's gauges: jobs in the queues by state (`punctual_queue_depth`), and the due runs
   * of each handler no live worker offers (`punctual_runs_waiting_for_worker`; 0 for one offered again).
   */
  async observe(metrics: Metrics): Promise<void> {
    const [counts, waiting] = await Promise.all([
      this.jobCounts(['waiting', 'active', 'delayed', 'prioritized', 'failed']),
      this.waitingForWorker(),
    ]);
    for (const [state, count] of Object.entries(counts)) metrics.queueDepth.set({ state }, count);
    metrics.waitingForWorker.reset();
    for (const w of waiting) metrics.waitingForWorker.set({ handler: w.handler }, w.runs);
  }
}
