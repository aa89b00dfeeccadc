import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type ClaimResult, ExecutionsRepository, TasksRepository } from '@punctual/db';
import { Metrics } from '@punctual/observability';
import { EXECUTION_CANCEL_CHANNEL } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { Batcher } from './batcher.js';

/** How often a buffered execution (`overlap=buffer_one`) tries again to start. */
const BUFFER_POLL_MS = 100;

/**
 * Claims an execution under its task's overlap policy. The database decides whether another
 * exclusive run is in progress (a partial unique index), never a read-then-write:
 * - `skip`: the newcomer ends `skipped(overlap)`;
 * - `buffer_one`: one newcomer waits until the running one ends, any further one is skipped;
 * - `replace`: the running one is cancelled (its worker is told over pub/sub), the newcomer runs.
 */
@Injectable()
export class OverlapClaimer {
  private readonly logger = new Logger(OverlapClaimer.name);
  private stopping = false;
  /** First claims of concurrent jobs share a statement; retries after an overlap go one by one. */
  private readonly firstClaims: Batcher<{ id: string; attemptId: string; workerId: string }, ClaimResult>;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly executions: ExecutionsRepository,
    private readonly tasks: TasksRepository,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
  ) {
    this.firstClaims = new Batcher(
      (requests) => this.executions.claimMany(requests, this.config.leaseMs),
      (r) => this.executions.claim(r.id, r.attemptId, r.workerId, this.config.leaseMs),
    );
  }

  /** Stops buffered executions from waiting any longer (shutdown); they stay queued. */
  stop(): void {
    this.stopping = true;
  }

  async claim(executionId: string, attemptId: string, workerId: string): Promise<ClaimResult> {
    const claimAgain = () => this.executions.claim(executionId, attemptId, workerId, this.config.leaseMs);
    let claim = await this.firstClaims.run({ id: executionId, attemptId, workerId });
    for (;;) {
      if (claim.kind !== 'overlap') return claim;
      const row = await this.executions.findById(executionId);
      const task = row?.taskId ? await this.tasks.findById(row.taskId) : null;
      if (!row || !task) return { kind: 'lost' };
      if (task.overlap === 'replace') {
        const running = await this.executions.findRunningExclusive(task.id);
        if (running && (await this.executions.cancel(running.id, `replaced by ${executionId}`))) {
          await this.redis.client.publish(this.redis.key(EXECUTION_CANCEL_CHANNEL), running.id);
          this.logger.log({ executionId: running.id, task: task.name, replacedBy: executionId }, 'execution cancelled: replaced');
        }
        claim = await claimAgain();
        continue;
      }
      if (task.overlap === 'buffer_one' && !this.stopping && (await this.executions.holdAsBuffered(executionId, task.id))) {
        await new Promise((resolve) => setTimeout(resolve, BUFFER_POLL_MS));
        claim = await claimAgain();
        continue;
      }
      if (this.stopping && task.overlap === 'buffer_one') return { kind: 'lost' };
      if (await this.executions.markSkipped(executionId, 'overlap', null)) this.metrics.skipped.inc({ reason: 'overlap' });
      return { kind: 'overlap' };
    }
  }
}
