import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type AwaitingCursor, LeaderExecutionsRepository, type LeaderFence, shardFence } from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { ExecutionsQueue } from '@punctual/queue';

/** Rows looked at per pass (reaped leases; executions whose job is checked; tasks with parked slots). */
export const RELAY_PAGE = 1_000;
/**
 * A slot parked this long is looked at by the relay: the end of the run ahead of it hands it its
 * turn at once, so one still parked after this waits behind a run that ended by another path.
 */
export const STRANDED_AFTER_MS = 2_000;
/**
 * Pages of executions whose job is checked in one pass while every page comes back full (a backlog
 * whose jobs Redis lost): they are pushed again at full speed, not a page per pass.
 */
const PAGES_PER_PASS = 50;
/**
 * Pages of held backlog runs only (see `held`) read past in one pass: the relay's cursor still
 * goes round every page in a few passes, without reading a whole held backlog every two seconds.
 */
const HELD_PAGES_PER_PASS = 5;
/** Jobs pushed again at once (their commands pipelined on the connection). */
const REQUEUE_TOGETHER = 200;

/**
 * The leader's repair loop: Redis may lose its data and workers may die, Postgres stays right.
 * Reaps expired leases (next attempt or `dead`) and pushes again the job of every execution that
 * has waited for one longer than RELAY_GRACE_MS and has none — paging through all of them with a
 * cursor kept from pass to pass (one page a pass, back to the start after the last), so a backlog
 * of any size is covered and none is starved. Fenced by the leader's epoch. It can never cause a
 * second success: the worker's fenced claim is the final guard.
 */
@Injectable()
export class RelayService {
  private readonly logger = new Logger(RelayService.name);
  /** Where each shard's paging stopped. */
  private readonly cursors = new Map<number, AwaitingCursor>();
  /** Where each shard's pass over stranded slots stopped (a task id). */
  private readonly strandedFrom = new Map<number, string>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly executions: LeaderExecutionsRepository,
    private readonly queue: ExecutionsQueue,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Repairs the shard `fence` leads (a bare epoch: the one shard). `now`: the cluster's clock
   * (Postgres'). `held`: the executions the leader holds back on purpose (a backlog released at
   * `CATCHUP_RATE`): waiting without a job is what they should do.
   */
  async repair(
    fence: LeaderFence,
    now = new Date(),
    pageSize = RELAY_PAGE,
    held: (id: string) => boolean = () => false,
  ): Promise<{ reaped: number; requeued: number; handed: number }> {
    const { shard } = shardFence(fence);
    const reaped = await this.executions.reapExpiredLeases(pageSize, fence);
    for (const execution of reaped) {
      if (execution.status === 'retrying' && execution.handler)
        await this.queue.ensureJob(execution.handler, execution.id, execution.attempt + 1);
    }
    // Parked slots whose turn came without a word get it now (their jobs go first, as any turn's).
    const { handed, next } = await this.executions.handOverStranded(
      new Date(now.getTime() - STRANDED_AFTER_MS),
      this.strandedFrom.get(shard) ?? null,
      pageSize,
      fence,
    );
    if (next) this.strandedFrom.set(shard, next);
    else this.strandedFrom.delete(shard);
    await this.queue.pushTurns(handed);
    this.metrics.turnsHanded.inc({ by: 'relay' }, handed.length);
    let requeued = 0;
    let heldPages = 0;
    for (let page = 0; page < PAGES_PER_PASS; page += 1) {
      const waiting = await this.executions.listAwaitingJob(
        new Date(now.getTime() - this.config.relayGraceMs),
        this.cursors.get(shard) ?? null,
        pageSize,
        fence,
      );
      if (waiting.length < pageSize) this.cursors.delete(shard);
      else this.cursors.set(shard, waiting.at(-1)!);
      // The job of a retry carries its attempt; a first attempt's (planned, or given back) is the
      // execution's own. A row without a handler lost its task (the delete ends its runs): no queue takes it.
      const attempts = waiting.flatMap((e) =>
        e.handler && !held(e.id)
          ? [
              {
                handler: e.handler,
                executionId: e.id,
                attempt: e.status === 'retrying' ? e.attempt + 1 : 1,
                fireAt: e.fireAt,
                found: e,
              },
            ]
          : [],
      );
      const missing = await this.queue.withoutJob(attempts);
      // A job ends (and is dropped) when its run ends: one missing now may have run since the rows
      // were read. Only the ones still waiting, read again, get their job back.
      const still = new Set(
        await this.executions.stillAwaitingJob(
          missing.map((m) => m.found),
          fence,
        ),
      );
      const again = missing.filter((a) => still.has(a.executionId));
      for (let i = 0; i < again.length; i += REQUEUE_TOGETHER) {
        await Promise.all(
          again.slice(i, i + REQUEUE_TOGETHER).map((m) => {
            const first =
              m.found.status === 'retrying' ? undefined : { fireAt: m.found.fireAt, releasedAt: now.getTime() };
            return this.queue.addAgain(m.handler, m.executionId, m.attempt, first, m.found.taskId ?? undefined);
          }),
        );
      }
      requeued += again.length;
      // A page with jobs for all its rows, or the last page: the rest waits for the next pass. A page
      // of held backlog runs only (no job expected) says nothing of the next: a few more are read
      // (HELD_PAGES_PER_PASS), not the whole backlog every pass.
      if (waiting.length < pageSize) break;
      if (again.length === 0 && (attempts.length > 0 || (heldPages += 1) >= HELD_PAGES_PER_PASS)) break;
    }
    if (reaped.length || requeued || handed.length)
      this.logger.warn({ reaped: reaped.length, requeued, handed: handed.length }, 'relay repaired executions');
    return { reaped: reaped.length, requeued, handed: handed.length };
  }
}
