import { Injectable } from '@nestjs/common';
import { slotOfExecutionId } from '@punctual/contract';
import {
  ExecutionQueriesRepository,
  ExecutionTransitionsRepository,
  HistoryRetention,
  type TaskExecution,
} from '@punctual/db';
import { EXECUTION_CANCEL_CHANNEL, ExecutionsQueue } from '@punctual/queue';
import { Metrics } from '@punctual/metrics';
import { RedisService } from '@punctual/redis';
import { ExecutionStateError, InvalidTaskError, NotFoundError } from './errors.js';

/** Operator actions on one execution: replay from the dead letter, cancel. */
@Injectable()
export class ExecutionsService {
  constructor(
    private readonly executions: ExecutionTransitionsRepository,
    private readonly queries: ExecutionQueriesRepository,
    private readonly queue: ExecutionsQueue,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
    private readonly retention: HistoryRetention,
  ) {}

  /**
   * Replays a dead execution of the namespace: a new attempt, now. A dead letter past its retention
   * is refused (422 `beyond_retention`): the next pass removes it, whatever its state then.
   */
  async retry(id: string, namespace: string): Promise<TaskExecution> {
    await this.mustBeIn(id, namespace);
    const slot = slotOfExecutionId(id) ?? (await this.queries.findById(id))?.scheduledFor ?? null;
    if (slot && (await this.retention.rules()).isExpired(namespace, slot, true, new Date()))
      throw new InvalidTaskError(
        'id',
        `execution ${id} is past the dead letters' retention: it is being removed`,
        'beyond_retention',
      );
    const replayed = await this.executions.retryDead(id);
    if (!replayed) throw await this.stateError(id, 'a dead execution can be retried');
    const { handler, ...execution } = replayed;
    // A replay of a run whose task is gone has no handler to run: it ends as the claim finds it.
    if (handler) await this.queue.pushAttempt(handler, id, execution.attempt + 1, 0);
    return execution;
  }

  /**
   * Cancels a pending or running execution. The worker running it is told by the state the cancel
   * moved it from — not by a read before it, which a claim may overtake — and its handler's signal
   * aborts; a worker that misses the message sees the cancel within a second anyway (LeaseKeeper).
   */
  async cancel(id: string, namespace: string, by?: string): Promise<TaskExecution> {
    await this.mustBeIn(id, namespace);
    const cancelled = await this.executions.cancel(id, 'cancelled by an operator', undefined, by);
    if (!cancelled)
      throw await this.stateError(id, 'a scheduled, queued, retrying or running execution can be cancelled');
    this.metrics.slotsDecided('cancelled', 'cancelled_by');
    if (cancelled.fromStatus === 'running')
      await this.redis.client.publish(this.redis.key(EXECUTION_CANCEL_CHANNEL), id);
    const { fromStatus: _, ...execution } = cancelled;
    return execution;
  }

  /** Another namespace's execution is one that does not exist. */
  private async mustBeIn(id: string, namespace: string): Promise<void> {
    if (!(await this.queries.inNamespace(id, namespace))) throw new NotFoundError('execution', id);
  }

  private async stateError(id: string, action: string): Promise<Error> {
    const row = await this.queries.findById(id);
    return row ? new ExecutionStateError(id, row.status, action) : new NotFoundError('execution', id);
  }
}
