import { DEFAULT_NAMESPACE, qualifiedName } from '@punctual/contract';
import type { Logger } from '@nestjs/common';
import {
  type ClaimWrite,
  type ClaimAnswer,
  type FlowControlRepository,
  isConnectionError,
  type Task,
} from '@punctual/db';
import { type FlowPolicy, type RunQuota } from '@punctual/planning';
import { announceFlowKey } from '@punctual/queue';
import type { RedisService } from '@punctual/redis';
import { Batcher } from '../batcher.js';
import { BATCH, BATCHES_IN_FLIGHT } from './claim-batches.js';

/** Flow-control lanes a worker keeps (see {@link FlowClaims.lane}). */
const FLOW_LANES_KEPT = 10_000;

/**
 * A flow-control key as its namespace owns it: tasks of one namespace naming `openai` share a limit,
 * tasks of another naming `openai` have their own (`team-a/openai`); the default namespace's keys
 * stay as written. A key names its own namespace's capacity only: keys hold no `/` (the API refuses
 * one), and a key stored with one before that rule is scoped whole (`default/team-a/openai` is not
 * team-a's `openai`).
 */
export function scopedFlowKey(task: Pick<Task, 'namespace'>, key: string): string {
  const namespace = task.namespace ?? DEFAULT_NAMESPACE;
  return key.includes('/') ? `${namespace}/${key}` : qualifiedName(namespace, key);
}

/** The task's concurrency key in its namespace (see {@link scopedFlowKey}), or null. */
export function concurrencyKeyOf(task: Pick<Task, 'namespace' | 'concurrencyKey'>): string | null {
  return task.concurrencyKey === null ? null : scopedFlowKey(task, task.concurrencyKey);
}

/**
 * A task's flow control with its namespace's run quotas (as the claim read them), or null when it
 * has neither (its claims share the batched write).
 */
export function flowPolicyOf(task: Task, quota: RunQuota | null = null): FlowPolicy | null {
  if (task.concurrencyKey === null && task.rateKey === null && quota === null) return null;
  return {
    quota,
    concurrency: task.concurrencyKey === null ? null : { key: concurrencyKeyOf(task)!, limit: task.concurrencyLimit! },
    rate:
      task.rateKey === null
        ? null
        : { key: scopedFlowKey(task, task.rateKey), limit: task.rateLimit!, perMs: task.ratePerMs! },
  };
}

/**
 * Claims of flow-controlled runs (DESIGN §5 "Flow control"): held at once (batched with others)
 * when their keys are full, else claimed in their lane under the keys' lock — straight there when
 * the keys last had room; and the word over Redis that a key moved.
 */
export class FlowClaims {
  /**
   * Flow-controlled claims by their flow control (keys and limits): the claims of one lane that
   * arrive together share one transaction, and a lane sends one at a time (see FlowControlRepository).
   */
  private readonly lanes = new Map<string, Batcher<ClaimWrite, ClaimAnswer>>();
  /** Flow-controlled claims of any keys, looked at together first: those whose keys are full are held in one statement. */
  private readonly holds: Batcher<{ write: ClaimWrite; flow: FlowPolicy }, ClaimAnswer | null>;

  constructor(
    private readonly flow: FlowControlRepository,
    private readonly redis: RedisService,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {
    this.holds = new Batcher(
      (claims) => this.flow.holdIfFull(claims),
      async (claim) => (await this.flow.holdIfFull([claim]))[0]!,
      BATCH,
      BATCHES_IN_FLIGHT,
      (error) => !isConnectionError(error),
    );
  }

  async claim(write: ClaimWrite, flow: FlowPolicy): Promise<ClaimAnswer> {
    const held = this.flow.hadRoom(flow) ? null : await this.holds.run({ write, flow });
    return held ?? (await this.lane(flow).run(write));
  }

  /** The lane of a flow control: one per keys-and-limits (forgotten all at once past a bound, as lanes are cheap to make). */
  private lane(flow: FlowPolicy): Batcher<ClaimWrite, ClaimAnswer> {
    const lane = JSON.stringify(flow);
    let batcher = this.lanes.get(lane);
    if (!batcher) {
      if (this.lanes.size >= FLOW_LANES_KEPT) this.lanes.clear();
      batcher = new Batcher(
        (writes) => this.flow.claimBatch(writes, flow, this.leaseMs),
        async (write) => (await this.flow.claimBatch([write], flow, this.leaseMs))[0]!,
        BATCH,
        1,
        (error) => !isConnectionError(error),
      );
      this.lanes.set(lane, batcher);
    }
    return batcher;
  }

  /** Tells every worker that a run of `key` started or ended: each brings its first run held on the key forward. */
  async wake(key: string): Promise<void> {
    const error = await announceFlowKey(this.redis, key);
    if (error)
      this.logger.warn({ err: error, key }, 'could not announce a flow-control key; held runs ask again on their own');
  }
}
