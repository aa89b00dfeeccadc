import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type CursorAdvance, ExecutionsRepository, type PlannedExecution, PrismaService, SchedulerStateRepository, TasksRepository } from '@punctual/db';
import { Metrics } from '@punctual/observability';
import { FencedOutError } from '../errors.js';
import { taskSchedule } from '../tasks/task-schedule.js';
import { planTaskSlots } from './slot-planner.js';

/** Tasks locked per planning transaction. */
const PLAN_BATCH = 500;
/** Batches per pass, so one pass cannot hold the loop for long. */
const MAX_BATCHES_PER_PASS = 40;
const MAX_SLOTS_PER_TASK_PER_PASS = 10_000;

/**
 * Turns due slots into `task_execution` rows. Each batch is one transaction that starts with the
 * fence check, locks due tasks (`SKIP LOCKED`), inserts every slot with one multi-row
 * `INSERT … ON CONFLICT DO NOTHING` and moves every cursor with one multi-row `UPDATE`.
 */
@Injectable()
export class PlannerService {
  private readonly logger = new Logger(PlannerService.name);

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionsRepository,
    private readonly state: SchedulerStateRepository,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Plans every due task as leader of `epoch`. Returns the inserted rows that still have to fire.
   * Throws {@link FencedOutError} when a newer leader exists (nothing of that batch is committed).
   */
  async planDueSlots(epoch: bigint, now: () => Date = () => new Date()): Promise<PlannedExecution[]> {
    const planned: PlannedExecution[] = [];
    for (let batch = 0; batch < MAX_BATCHES_PER_PASS; batch += 1) {
      const { inserted, tasksLocked } = await this.planBatch(epoch, now());
      planned.push(...inserted);
      if (tasksLocked < PLAN_BATCH) break;
    }
    return planned;
  }

  private async planBatch(epoch: bigint, now: Date): Promise<{ inserted: PlannedExecution[]; tasksLocked: number }> {
    const result = await this.prisma.$transaction(
      async (tx) => {
        if (!(await this.state.fence(tx, epoch))) throw new FencedOutError(epoch);
        const due = await this.tasks.lockDue(tx, new Date(now.getTime() + this.config.lookaheadMs), PLAN_BATCH);
        const rows: PlannedExecution[] = [];
        const advances: CursorAdvance[] = [];
        for (const task of due) {
          try {
            const plan = planTaskSlots(task, taskSchedule(task), now, {
              lookaheadMs: this.config.lookaheadMs,
              catchupMax: this.config.catchupMax,
              maxSlotsPerPass: MAX_SLOTS_PER_TASK_PER_PASS,
              newId: randomUUID,
            });
            rows.push(...plan.executions);
            advances.push(plan.advance);
          } catch (error) {
            // A schedule that no longer compiles must not stall every other task: park its cursor.
            this.logger.error({ task: task.name, err: error }, 'cannot compute slots; task left unplanned');
            advances.push({ id: task.id, nextRunAt: null, lastScheduledFor: null, missed: 0 });
          }
        }
        const inserted = await this.executions.insertPlannedIds(tx, rows);
        await this.tasks.advanceCursors(tx, advances);
        const scheduled = rows.filter((e) => e.status === 'scheduled' && inserted.has(e.id));
        return { inserted: scheduled, tasksLocked: due.length, missed: advances.reduce((sum, a) => sum + a.missed, 0) };
      },
      { timeout: 30_000, maxWait: 10_000 },
    );
    // Counted after commit: a fenced-out batch planned nothing.
    this.metrics.planned.inc(result.inserted.length);
    this.metrics.missed.inc(result.missed);
    return result;
  }
}
