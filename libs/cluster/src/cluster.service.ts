import { Injectable } from '@nestjs/common';
import type { ClockOffset, Cluster } from '@punctual/contract';
import {
  ExecutionQueriesRepository,
  FlowControlRepository,
  HistoryRetention,
  SchedulerStateRepository,
} from '@punctual/db';
import { RedisService } from '@punctual/redis';
import type { JobType } from 'bullmq';
import { HandlerQueues } from './handler-queues.js';
import { WorkerDirectory } from './worker-directory.js';

/** The job states counted in the view, summed over every handler's queue. */
const JOB_STATES: JobType[] = [
  'active',
  'completed',
  'delayed',
  'failed',
  'prioritized',
  'waiting',
  'waiting-children',
];

/** Flow-control keys listed: the busiest. */
const BUSIEST_KEYS = 20;

/**
 * What the cluster looks like now, for operators: each shard's leader and epoch (scheduler_state), the
 * live workers (their directory entries) and the handlers due runs wait for that none of them
 * offers, queue depth (BullMQ job counts and pending executions),
 * the busiest flow-control keys, the clock offsets each process publishes under `<prefix>:clock:<role>:<instance>`,
 * and how long the history is kept (and how far back it goes).
 */
@Injectable()
export class ClusterService {
  constructor(
    private readonly state: SchedulerStateRepository,
    private readonly executions: ExecutionQueriesRepository,
    private readonly flow: FlowControlRepository,
    private readonly directory: WorkerDirectory,
    private readonly queues: HandlerQueues,
    private readonly redis: RedisService,
    private readonly retention: HistoryRetention,
  ) {}

  /**
   * The view; `scope`: the namespaces a scoped key may see (null: the whole cluster) — its runs
   * waiting for a worker are its namespaces' only, and the workers' handlers leave out those only
   * other namespaces' tasks name (see {@link handlers}).
   */
  async snapshot(scope: readonly string[] | null = null): Promise<Cluster> {
    const [shards, workers, jobs, executions, flow, clockOffsets, waiting, retention] = await Promise.all([
      this.state.shards(),
      this.directory.workers(),
      // Read afresh: a task created a moment ago has its handler's queue counted.
      this.queues.jobCounts(JOB_STATES, 0),
      this.executions.countUnfinished(),
      this.flow.busiestKeys(BUSIEST_KEYS),
      this.clockOffsets(),
      this.queues.waitingForWorker(scope),
      this.retention.ofCluster(),
    ]);
    const hidden = await this.hiddenHandlers([...new Set(workers.flatMap((w) => w.handlers))], scope);
    const state = shards[0];
    return {
      leader: {
        instance: state?.leaderId ?? null,
        epoch: Number(state?.epoch ?? 0),
        acquiredAt: state?.acquiredAt?.toISOString() ?? null,
        heartbeatAt: state?.heartbeatAt?.toISOString() ?? null,
      },
      shards: shards.map((s) => ({
        shard: s.shard,
        leader: s.leaderId,
        epoch: Number(s.epoch),
        acquiredAt: s.acquiredAt?.toISOString() ?? null,
        heartbeatAt: s.heartbeatAt?.toISOString() ?? null,
      })),
      workers: workers.map((w) => ({ ...w, handlers: w.handlers.filter((h) => !hidden.has(h)) })),
      waitingForWorker: waiting.map((d) => ({ handler: d.handler, runs: d.runs, since: d.since.toISOString() })),
      queue: { jobs, executions },
      flow,
      clockOffsets,
      retention,
    };
  }

  /**
   * The handlers live workers offer, with how many offer each; `scope` as in {@link snapshot}: a
   * scoped key is not shown a handler only other namespaces' tasks name.
   */
  async handlers(scope: readonly string[] | null = null): Promise<{ name: string; workers: number }[]> {
    const offered = await this.directory.handlers();
    const hidden = await this.hiddenHandlers(
      offered.map((h) => h.name),
      scope,
    );
    return offered.filter((h) => !hidden.has(h.name));
  }

  private hiddenHandlers(handlers: string[], scope: readonly string[] | null): Promise<Set<string>> {
    return scope === null ? Promise.resolve(new Set()) : this.executions.handlersOnlyOutside(handlers, scope);
  }

  /** Every published offset; an entry that is not the JSON `{ offsetMs, measuredAt }` is left out. */
  private async clockOffsets(): Promise<ClockOffset[]> {
    const offsets: ClockOffset[] = [];
    for (const [rest, value] of await this.redis.entries('clock')) {
      const offset = parseOffset(value);
      // `<role>:<instance>`; an instance id may itself hold colons (`host:pid`).
      const split = rest.indexOf(':');
      if (offset && split > 0) offsets.push({ role: rest.slice(0, split), instance: rest.slice(split + 1), ...offset });
    }
    return offsets.sort((a, b) => a.role.localeCompare(b.role) || a.instance.localeCompare(b.instance));
  }
}

function parseOffset(value: string): { offsetMs: number; measuredAt: string } | null {
  try {
    const parsed = JSON.parse(value) as { offsetMs?: unknown; measuredAt?: unknown };
    const at =
      typeof parsed.measuredAt === 'string' || typeof parsed.measuredAt === 'number'
        ? new Date(parsed.measuredAt)
        : null;
    if (typeof parsed.offsetMs !== 'number' || !Number.isFinite(parsed.offsetMs) || !at || Number.isNaN(at.getTime()))
      return null;
    return { offsetMs: parsed.offsetMs, measuredAt: at.toISOString() };
  } catch {
    return null; // an entry this version cannot read is left out of the view, as one that expired
  }
}
