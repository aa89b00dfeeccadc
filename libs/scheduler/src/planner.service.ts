import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { executionIdFor } from '@punctual/contract';
import {
  ExecutionTransitionsRepository,
  HistoryRoom,
  type LeaderFence,
  type PlanError,
  PrismaService,
  SchedulerStateRepository,
  shardFence,
  TaskCursorsRepository,
} from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { tracing } from '@punctual/tracing';
import {
  type CursorAdvance,
  phasedLookaheadMs,
  type PlannedExecution,
  planTaskSlots,
  taskSchedule,
} from '@punctual/planning';
import { FencedOutError } from './errors.js';

/** Tasks locked per planning transaction. */
const PLAN_BATCH = 500;
/** Batches per pass, so one pass cannot hold the loop for long. */
const MAX_BATCHES_PER_PASS = 40;
const MAX_SLOTS_PER_TASK_PER_PASS = 10_000;
/**
 * Slots computed per planning transaction (a few µs each). The computing happens inside the
 * transaction, between its statements, and a scheduler's session may stay idle in a transaction for
 * less than its lease (a frozen leader must not block its successor): a batch of long backlogs is
 * spread over several transactions instead.
 */
const SLOTS_PER_BATCH = 50_000;
/**
 * A task due for planning (its next slot within the lookahead) gets its slots about this far beyond
 * the lookahead at once: its cursor then moves once per several slots of a frequent schedule
 * instead of once per slot (a task row rewritten each second costs as much as the slot's own row).
 * Each task plans to its own phase of it (see `phasedLookaheadMs`), so tasks do not come due for
 * planning all on one instant.
 */
export const PLAN_STRIDE_MS = 5_000;
/**
 * How far ahead a one-off is planned: a campaign of one-offs created through `tasks:batch` is
 * planned (and put in the leader's timer) as it is created, in the planner's usual batches, rather
 * than all at once in the seconds before its instant.
 */
export const ONE_OFF_LOOKAHEAD_MS = 60_000;

/**
 * Turns due slots into `task_execution` rows. Each batch is one transaction that starts with the
 * fence check, locks due tasks (`SKIP LOCKED`), inserts every slot with one multi-row
 * `INSERT … ON CONFLICT DO NOTHING` and moves every cursor with one multi-row `UPDATE`. A task
 * whose slots cannot be computed keeps its cursor and shows the error; the others carry on.
 */
@Injectable()
export class PlannerService {
  private readonly logger = new Logger(PlannerService.name);

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly prisma: PrismaService,
    private readonly cursors: TaskCursorsRepository,
    private readonly executions: ExecutionTransitionsRepository,
    private readonly state: SchedulerStateRepository,
    private readonly metrics: Metrics,
    private readonly room: HistoryRoom,
  ) {}

  /**
   * Plans every due task of the shard `fence` leads (a bare epoch: the one shard), as of `now`
   * (Postgres' clock). Returns the inserted rows that still have to fire. Throws
   * {@link FencedOutError} when a newer leader of the shard exists (nothing of that batch is committed).
   */
  async planDueSlots(fence: LeaderFence, now: () => Date = () => new Date()): Promise<PlannedExecution[]> {
    const planned: PlannedExecution[] = [];
    // Most ticks find nothing due (a task's slots are planned a stride ahead): one look, no transaction.
    const at = now().getTime();
    if (
      !(await this.cursors.anyDue(new Date(at + this.config.lookaheadMs), new Date(at + ONE_OFF_LOOKAHEAD_MS), fence))
    )
      return planned;
    const { epoch, shard } = shardFence(fence);
    for (let batch = 0; batch < MAX_BATCHES_PER_PASS; batch += 1) {
      const attributes = { 'punctual.epoch': epoch.toString(), 'punctual.shard': shard };
      const { inserted, tasksLocked, complete } = await tracing.withSpan('punctual.plan_batch', attributes, () =>
        this.planBatch(fence, now()),
      );
      planned.push(...inserted);
      if (tasksLocked < PLAN_BATCH && complete) break;
    }
    return planned;
  }

  private async planBatch(
    fence: LeaderFence,
    now: Date,
  ): Promise<{ inserted: PlannedExecution[]; tasksLocked: number; complete: boolean }> {
    // A slot with no partition yet, or a catch-up below the live horizon: the room is made and the
    // batch planned again (see HistoryRoom).
    const result = await this.room.withRoom(() =>
      this.prisma.$transaction(
        async (tx) => {
          if (!(await this.state.fence(fence, tx))) throw new FencedOutError(shardFence(fence).epoch);
          const at = now.getTime();
          const due = await this.cursors.lockDue(
            new Date(at + this.config.lookaheadMs),
            new Date(at + ONE_OFF_LOOKAHEAD_MS),
            PLAN_BATCH,
            tx,
            fence,
          );
          const rows: PlannedExecution[] = [];
          const advances: CursorAdvance[] = [];
          const errors: PlanError[] = [];
          let budget = SLOTS_PER_BATCH;
          const sloMissed: { task: string; missed: number; startWithinMs: number }[] = [];
          for (const task of due) {
            // Out of budget: the rest keep their cursors (still due) for the next batch.
            if (budget <= 0) break;
            try {
              const plan = planTaskSlots(task, taskSchedule(task), now, {
                lookaheadMs:
                  task.scheduleKind === 'at'
                    ? Math.max(ONE_OFF_LOOKAHEAD_MS, this.config.lookaheadMs)
                    : phasedLookaheadMs(task.id, now.getTime(), this.config.lookaheadMs, PLAN_STRIDE_MS),
                catchupMax: this.config.catchupMax,
                maxSlotsPerPass: Math.min(MAX_SLOTS_PER_TASK_PER_PASS, budget),
                newId: executionIdFor,
              });
              budget -= plan.examined;
              rows.push(...plan.executions);
              advances.push(plan.advance);
              if (task.sloStartWithinMs !== null && plan.advance.missed > 0)
                sloMissed.push({ task: task.name, missed: plan.advance.missed, startWithinMs: task.sloStartWithinMs });
            } catch (error) {
              // Never completed, never skipped past: the task waits with its cursor where it was.
              const message = error instanceof Error ? error.message : String(error);
              this.logger.error(
                { task: task.name, err: error },
                'cannot compute slots; task kept with its cursor, retried in a minute',
              );
              errors.push({ id: task.id, error: message });
            }
          }
          const inserted = await this.executions.insertPlannedIds(rows, tx);
          await this.cursors.advanceCursors(advances, tx);
          await this.cursors.recordPlanErrors(errors, tx);
          const scheduled = rows.filter((e) => e.status === 'scheduled' && inserted.has(e.id));
          const missed = advances.reduce((sum, a) => sum + a.missed, 0);
          return {
            inserted: scheduled,
            tasksLocked: due.length,
            complete: budget > 0,
            missed,
            errors: errors.length,
            sloMissed,
          };
        },
        { timeout: 30_000, maxWait: 10_000 },
      ),
    );
    // Counted after commit: a fenced-out batch planned nothing.
    this.metrics.planned.inc(result.inserted.length);
    this.metrics.missed.inc(result.missed);
    this.metrics.slotsDecided('missed', 'late', result.missed);
    for (const m of result.sloMissed) this.metrics.observeTaskSlot(m.task, Infinity, m.startWithinMs, m.missed);
    this.metrics.taskErrors.inc(result.errors);
    // An idle tick (nothing due) is not worth a trace; a batch's span is where its rows' traces start.
    if (result.tasksLocked === 0) tracing.discard();
    tracing.annotate({
      'punctual.tasks': result.tasksLocked,
      'punctual.planned': result.inserted.length,
      'punctual.missed': result.missed,
    });
    tracing.mark(result.inserted);
    return result;
  }
}
