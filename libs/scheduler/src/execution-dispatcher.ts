import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { Metrics } from '@punctual/metrics';
import { isBacklog } from '@punctual/planning';
import { tracing } from '@punctual/tracing';
import { ExecutionsQueue } from '@punctual/queue';
import type { Fireable } from './fire-timer.js';

/** Executions per push (`addBulk`): large enough to amortise the round trip, small enough to overlap with the next push. */
const CHUNK = 2_000;
const CHUNKS_IN_FLIGHT = 2;
/**
 * Executions due at one instant beyond this many are fired in groups (see ExecutionJobData.group):
 * a campaign, or a thousand tasks of one schedule, costs a queue job per GROUP_SIZE executions, and
 * a worker claims a group's executions in one statement. Fewer due together fire one job each.
 */
export const GROUP_FROM = 64;
export const GROUP_SIZE = 25;

export interface PushOptions {
  /** Asked before each chunk: a deposed leader pushes no more. */
  stillLeading?: () => boolean;
  /** The cluster's clock (Postgres'), against which lateness and the release instant are measured. */
  now?: () => number;
}

/**
 * Pushes due executions to their handlers' queues as immediate jobs (DESIGN §4 "Fire"), each job
 * carrying its `fire_at` and the instant it was pushed; many due at one instant go in fire groups of
 * a few dozen. It writes nothing to a row: the claim records the job's instant as `queued_at`. A
 * job lost on the way is pushed again, under the same id, by the next sweep or the relay.
 */
@Injectable()
export class ExecutionDispatcher {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly queue: ExecutionsQueue,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Returns the executions pushed (all of them, unless the leader was deposed on the way): the
   * first chunks, in order. Two chunks are on their way at a time, so a large instant (a campaign)
   * is pushed at the queue's pace, not at the pace of one round trip after another.
   */
  async push(due: Fireable[], options: PushOptions = {}): Promise<Fireable[]> {
    const { stillLeading = () => true, now = Date.now } = options;
    const lead = this.config.fireLeadMs;
    const chunks: Promise<Fireable[]>[] = [];
    const pushChunk = async (chunk: Fireable[]) => {
      await tracing.withSpan(
        'punctual.fire_chunk',
        { 'punctual.executions': chunk.length },
        () => this.pushToQueues(chunk, now()),
        { follows: chunk },
      );
      const queuedAt = now();
      this.metrics.fired.inc(chunk.length);
      // Lateness against the instant the push was meant for (fire_at − lead), not fire_at itself. A
      // backlog run is pushed late on purpose (its turn within CATCHUP_RATE): not lateness.
      for (const e of chunk)
        if (!isBacklog(e.trigger))
          this.metrics.dispatchLag.observe(Math.max(0, queuedAt - (e.fireAt.getTime() - lead)) / 1000);
      return chunk;
    };
    // Grouped executions stay together in a chunk: a chunk ends at an instant's edge or a group's.
    const ordered = [...due].sort((a, b) => a.fireAt.getTime() - b.fireAt.getTime());
    try {
      for (let i = 0; i < ordered.length && stillLeading(); i += CHUNK) {
        chunks.push(pushChunk(ordered.slice(i, i + CHUNK)));
        if (chunks.length >= CHUNKS_IN_FLIGHT) await chunks[chunks.length - CHUNKS_IN_FLIGHT];
      }
      return (await Promise.all(chunks)).flat();
    } catch (error) {
      // Every push on its way is seen to its end before the failure is reported (none left to reject unobserved).
      await Promise.allSettled(chunks);
      throw error;
    }
  }

  /**
   * Pushes a chunk, each execution to its handler's queue: the executions of one handler crowding
   * an instant in groups, the others one job each; backlog runs behind on-time ones (`BACKLOG_PRIORITY`).
   */
  private async pushToQueues(chunk: Fireable[], releasedAt: number): Promise<void> {
    const crowds = new Map<string, (Fireable & { backlog: boolean })[]>();
    for (const each of chunk) {
      const e = { ...each, backlog: isBacklog(each.trigger) };
      const key = `${e.fireAt.getTime()} ${e.handler} ${e.backlog}`;
      let list = crowds.get(key);
      if (!list) crowds.set(key, (list = []));
      list.push(e);
    }
    const singles: (Fireable & { backlog: boolean })[] = [];
    const groups: { fireAt: Date; handler: string; backlog: boolean; executions: Fireable[] }[] = [];
    for (const list of crowds.values()) {
      if (list.length < GROUP_FROM) singles.push(...list);
      else
        for (let i = 0; i < list.length; i += GROUP_SIZE)
          groups.push({
            fireAt: list[0]!.fireAt,
            handler: list[0]!.handler,
            backlog: list[0]!.backlog,
            executions: list.slice(i, i + GROUP_SIZE),
          });
    }
    await Promise.all([this.queue.pushNow(singles, releasedAt), this.queue.pushGroups(groups, releasedAt)]);
  }
}
