import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { AttemptsRepository, type ClaimOutcome, type ClaimRequest, ExecutionTransitionsRepository, type TaskExecution } from '@punctual/db';
import { Metrics } from '@punctual/observability';
import { EXECUTION_CANCEL_CHANNEL } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { Batcher } from './batcher.js';

/** How often a buffered execution (`overlap=buffer_one`) tries again to start. */
const BUFFER_POLL_MS = 100;
/** Claims lost to a concurrent claim on the overlap guard before the job is told to wait its turn. */
const MAX_CONTENDED = 5;

/**
 * What a claim under the overlap policy came to. `overlap`: the execution ended `skipped(overlap)`.
 * `wait`: its turn has not come (an earlier slot of the task first); `late`: the leader's misfire
 * policy is to decide it — either way the job should come back.
 */
export type ClaimResult =
  | { kind: 'claimed'; execution: TaskExecution }
  | { kind: 'lost' }
  | { kind: 'overlap' }
  | { kind: 'wait'; taskId: string | null }
  | { kind: 'late' };

/**
 * Claims an execution under its task's overlap policy. The claim statement itself judges whether
 * the task is free (see `ClaimOutcome`), and a partial unique index guarantees at most one exclusive
 * run — never a read-then-write. The policy judges only a run that was already running at the
 * slot's own `scheduled_for`:
 * - `skip`: the newcomer ends `skipped(overlap)`;
 * - `buffer_one`: one newcomer waits until the running one ends, any further one is skipped;
 * - `replace`: the running one is cancelled (its worker is told over pub/sub), the newcomer runs.
 * Anything else — a backlog after a failover, an outage, a resume — waits its turn, in slot order.
 */
@Injectable()
export class OverlapClaimer {
  private readonly logger = new Logger(OverlapClaimer.name);
  private stopping = false;
  /** First claims of concurrent jobs share a statement; claims made again go one by one. */
  private readonly firstClaims: Batcher<ClaimRequest, ClaimOutcome>;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly attempts: AttemptsRepository,
    private readonly executions: ExecutionTransitionsRepository,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
  ) {
    this.firstClaims = new Batcher(
      (requests) => this.attempts.claimMany(requests, this.config.leaseMs),
      (request) => this.attempts.claim(request, this.config.leaseMs),
    );
  }

  /** Stops buffered executions from waiting any longer (shutdown); they stay queued. */
  stop(): void {
    this.stopping = true;
  }

  async claim(executionId: string, attemptId: string, workerId: string, releasedAt?: number): Promise<ClaimResult> {
    const request = { id: executionId, attemptId, workerId, releasedAt };
    const claimAgain = () => this.attempts.claim(request, this.config.leaseMs);
    let outcome = await this.firstClaims.run(request);
    for (let contended = 0; ; ) {
      switch (outcome.kind) {
        case 'claimed':
        case 'lost':
        case 'wait':
        case 'late':
          return outcome;
        case 'contended':
          // A concurrent claim of the same task won the guard a moment ago: ask again, now judged.
          if (++contended > MAX_CONTENDED) return { kind: 'wait', taskId: null };
          await sleep(5 * contended);
          outcome = await claimAgain();
          continue;
        case 'busy': {
          const next = await this.applyPolicy(executionId);
          if (next !== 'again') return next;
          outcome = await claimAgain();
        }
      }
    }
  }

  /** The task was busy at this slot: its overlap policy decides. `again`: claim once more. */
  private async applyPolicy(executionId: string): Promise<ClaimResult | 'again'> {
    const rival = await this.attempts.rivalOf(executionId);
    if (!rival) return { kind: 'lost' };
    if (rival.overlap === 'replace') {
      if (rival.runningId && (await this.executions.cancel(rival.runningId, `replaced by ${executionId}`))) {
        await this.redis.client.publish(this.redis.key(EXECUTION_CANCEL_CHANNEL), rival.runningId);
        this.logger.log({ executionId: rival.runningId, replacedBy: executionId }, 'execution cancelled: replaced');
      }
      return 'again';
    }
    if (rival.overlap === 'buffer_one') {
      if (this.stopping) return { kind: 'lost' };
      if (await this.attempts.holdAsBuffered(executionId, rival.taskId)) {
        await sleep(BUFFER_POLL_MS);
        return 'again';
      }
    }
    if (await this.attempts.markSkipped(executionId, 'overlap', null)) this.metrics.skipped.inc({ reason: 'overlap' });
    return { kind: 'overlap' };
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
