import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type CatchUp, executionIdFor } from '@punctual/contract';
import {
  type Db,
  ExecutionTransitionsRepository,
  type Prisma,
  type Task,
  TaskCursorsRepository,
  TasksRepository,
} from '@punctual/db';
import { Metrics } from '@punctual/metrics';
import { PINNED_FIELDS, pinnedDefinitionOf, planTaskSlots, replanUnstarted, taskSchedule } from '@punctual/planning';
import type { TaskDefinition } from './task-definition.js';
import { inDryRun } from './change-preview.js';

const CATCH_UP_MISFIRE = { skip: 'skip', latest: 'run_once', all: 'run_all' } as const;

/** What decides when a task's slots are. */
const SCHEDULE_FIELDS = [
  'scheduleKind',
  'cron',
  'rrule',
  'runAt',
  'everyMs',
  'timezone',
  'startAt',
  'endAt',
  'remainingRuns',
  'jitterMs',
  'dstGap',
  'dstOverlap',
  'exclude',
  'calendars',
] as const;
/**
 * What decides what a slot runs and how: what an execution in progress pins, and the policies that
 * judge a slot's start. Description, notification and labels are neither.
 */
const RUN_FIELDS = [...PINNED_FIELDS, 'overlap', 'misfire', 'maxDelayMs'] as const;
/** Slots examined when bringing a task up to the instant of a change (a longer backlog is counted on the next pass). */
const SLOTS_PER_CHANGE = 100_000;

/** A change's effect on running executions: the ones cancelled, whose workers must be told to abort. */
export interface LifecycleResult {
  task: Task;
  cancelledRunning: string[];
}

/**
 * What edits, pauses, resumes and deletes do to a task's executions, inside the caller's
 * transaction with the task row locked (so the planner, which locks due tasks, never plans the task
 * halfway through a change). The rules of DESIGN §4, "Edits never lose a slot":
 * - a change takes effect from the moment it is made: slots due before it are planned under the
 *   old definition first (none is left without a row or a count when the planner was behind);
 * - only a change to what runs or when re-plans (a new plan version); rows that have not started
 *   are re-planned — a slot the new definition also has keeps its row and runs once, under the new
 *   definition; a slot still to come that it does not have is withdrawn;
 * - executions in progress finish their slot under the definition they started with (it is pinned
 *   on them); only delete, cancel and pause with cancel stop them. Every unfinished row of the task
 *   is locked first, so a worker's claim and the change serialize (never a claim that runs the old
 *   definition with nothing pinned, nor a slot skipped as `task_changed`);
 * - pause stops new slots: slots due and not started end `skipped(paused)`, planned slots still to
 *   come are withdrawn and the cursor waits on the first of them; resume decides the slots of the
 *   pause by `catchUp` and plans on from the resume instant.
 */
@Injectable()
export class TaskLifecycle {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly tasks: TasksRepository,
    private readonly cursors: TaskCursorsRepository,
    private readonly executions: ExecutionTransitionsRepository,
    private readonly metrics: Metrics,
  ) {}

  /** Applies a new definition to `before` (locked) as of `now`; `paused` in it pauses or resumes. */
  async edit(tx: Db, before: Task, definition: TaskDefinition, now: Date): Promise<LifecycleResult> {
    const { nextRunAt, status: wanted, ...fields } = definition;
    const after = { ...before, ...fields } as Task;
    const scheduleChanged = SCHEDULE_FIELDS.some((f) => comparable(before[f]) !== comparable(after[f]));
    const replans = scheduleChanged || RUN_FIELDS.some((f) => comparable(before[f]) !== comparable(after[f]));
    let task: Task;
    if (!replans) {
      task = await this.tasks.update(before.id, fields, { replans: false, at: now }, tx);
    } else {
      const planVersion = before.planVersion + 1;
      await this.executions.lockUnfinished(before.id, tx);
      await this.executions.pinInProgress(
        before.id,
        pinnedDefinitionOf(before) as unknown as Prisma.InputJsonValue,
        tx,
      );
      // The old definition's slots up to now belong to it: plan them before it is gone (the slots
      // of a pause so far are only counted: the resume that would have decided them will not see them).
      if (scheduleChanged)
        await this.planDue(
          tx,
          { ...before, planVersion, overlap: after.overlap },
          now,
          before.status === 'paused' ? 'skip' : undefined,
        );
      const decision = replanUnstarted(
        await this.executions.unstartedOfTask(before.id, tx),
        now,
        { ...after, planVersion },
        scheduleChanged ? taskSchedule(after) : null,
      );
      await this.executions.withdraw(decision.withdraw, tx);
      await this.executions.replan(decision.keep, tx);
      const cursor = scheduleChanged ? (nextRunAt as Date | null) : before.nextRunAt;
      task = await this.tasks.update(
        before.id,
        {
          ...fields,
          nextRunAt: cursor,
          status: cursor === null ? 'completed' : before.status === 'completed' ? 'active' : before.status,
        },
        { replans: true, at: now },
        tx,
      );
    }
    if (task.status === 'active' && wanted === 'paused') return this.pause(tx, task, now, false);
    if (task.status === 'paused' && wanted !== 'paused')
      return { task: await this.resume(tx, task, now), cancelledRunning: [] };
    return { task, cancelledRunning: [] };
  }

  /** Pauses an active task; with `cancel`, its executions in progress are cancelled too. */
  async pause(tx: Db, task: Task, now: Date, cancel: boolean, note?: string): Promise<LifecycleResult> {
    if (task.status !== 'active') return { task, cancelledRunning: [] };
    await this.executions.lockUnfinished(task.id, tx);
    await this.planDue(tx, task, now);
    const unstarted = await this.executions.unstartedOfTask(task.id, tx);
    const due = unstarted.filter((e) => e.scheduledFor.getTime() <= now.getTime() && e.trigger !== 'manual');
    const ahead = unstarted.filter((e) => e.scheduledFor.getTime() > now.getTime() && e.trigger === 'schedule');
    this.decided(
      'skipped',
      'paused',
      await this.executions.skipUnstarted(
        due.map((e) => e.id),
        'paused',
        tx,
      ),
    );
    await this.executions.withdraw(
      ahead.map((e) => e.id),
      tx,
    );
    const { cancelled: count, running: cancelled } = cancel
      ? await this.executions.cancelOfTask(task.id, 'cancelled by a pause', tx)
      : { cancelled: 0, running: [] };
    this.decided('cancelled', 'paused', count);
    const cursor = firstSlotAfter(task, now) ?? task.nextRunAt;
    const paused = await this.tasks.update(
      task.id,
      { status: 'paused', nextRunAt: cursor, pauseNote: note ?? null },
      { replans: false, at: now },
      tx,
    );
    return { task: paused, cancelledRunning: cancelled.map((e) => e.id) };
  }

  /**
   * Resumes a paused task. The slots that fell due while it was paused are decided by `catchUp`
   * (default: the task's misfire policy): `skip` records them all as `missed`, `latest` runs the
   * most recent one now, `all` runs them (at most CATCHUP_MAX; the rest `missed`).
   */
  async resume(tx: Db, task: Task, now: Date, catchUp?: CatchUp): Promise<Task> {
    if (task.status !== 'paused') return task;
    // Every slot of the pause is late: plan them now, as of now, with no lookahead.
    const misfire = catchUp ? CATCH_UP_MISFIRE[catchUp] : task.misfire;
    const plan = planTaskSlots({ ...task, misfire, maxDelayMs: 0 }, taskSchedule(task), now, this.slotOptions());
    await this.executions.insertPlanned(plan.executions, tx);
    // Past the last slot examined, continue from now: a backlog over the limit is only counted.
    let cursor = plan.advance.nextRunAt;
    if (cursor && cursor.getTime() <= now.getTime()) cursor = taskSchedule(task).next(now);
    await this.cursors.advanceCursors([{ ...plan.advance, nextRunAt: cursor }], tx);
    return this.tasks.update(
      task.id,
      { status: cursor === null ? 'completed' : 'active', pauseNote: null },
      { replans: false, at: now },
      tx,
    );
  }

  /** Before a delete: planned slots still to come are withdrawn, every other unfinished execution cancelled. Returns the running ones. */
  async cancelAll(tx: Db, task: Task, now: Date): Promise<string[]> {
    // Slots of the schedule still to come were never due: withdrawn, as a pause withdraws them (the
    // timeline says the task was deleted), not cancelled runs at the head of the task's history.
    await this.executions.lockUnfinished(task.id, tx);
    const unstarted = await this.executions.unstartedOfTask(task.id, tx);
    await this.executions.withdraw(
      unstarted.filter((e) => e.scheduledFor.getTime() > now.getTime() && e.trigger === 'schedule').map((e) => e.id),
      tx,
    );
    const { cancelled, running } = await this.executions.cancelOfTask(task.id, 'task deleted', tx);
    this.decided('cancelled', 'deleted', cancelled);
    return running.map((e) => e.id);
  }

  /**
   * Plans an active task's slots that are due by `now` and not yet planned (the planner may be
   * behind), as the planner would with no lookahead; `misfire` overrides the task's policy.
   */
  private async planDue(tx: Db, task: Task, now: Date, misfire?: Task['misfire']): Promise<void> {
    if (!task.nextRunAt || task.nextRunAt.getTime() > now.getTime() || task.status === 'completed') return;
    const counted = misfire !== undefined;
    const plan = planTaskSlots(
      { ...task, misfire: misfire ?? task.misfire, maxDelayMs: counted ? 0 : task.maxDelayMs },
      taskSchedule(task),
      now,
      this.slotOptions(),
    );
    await this.executions.insertPlanned(plan.executions, tx);
    await this.cursors.advanceCursors([plan.advance], tx);
  }

  /** Counts slots decided (`punctual_slots_total`) — not in a dry run, which decides nothing. */
  private decided(outcome: string, reason: string, n: number): void {
    if (!inDryRun()) this.metrics.slotsDecided(outcome, reason, n);
  }

  private slotOptions() {
    return {
      lookaheadMs: 0,
      catchupMax: this.config.catchupMax,
      maxSlotsPerPass: SLOTS_PER_CHANGE,
      newId: executionIdFor,
    };
  }
}

/** The task's first slot after `now`, or null when it has none (or its schedule cannot be computed). */
function firstSlotAfter(task: Task, now: Date): Date | null {
  try {
    return taskSchedule(task).next(now);
  } catch {
    return null; // the planner records the schedule's error on the task (lastError); here it has no slot
  }
}

/** A field's value as text that is equal for equal values (object keys in any order). */
function comparable(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (value !== null && typeof value === 'object') return JSON.stringify(sortedKeys(value));
  return String(value ?? '');
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]),
  );
}
