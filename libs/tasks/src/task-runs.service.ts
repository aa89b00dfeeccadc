import { Injectable } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import { ClockService } from '@punctual/clock';
import {
  BACKFILL_DEFAULT,
  BACKFILL_MAX,
  type CatchUp,
  executionIdFor,
  formatDuration,
  splitQualifiedName,
} from '@punctual/contract';
import {
  type Db,
  ExecutionTransitionsRepository,
  HistoryRetention,
  HistoryRoom,
  PrismaService,
  type Task,
  type TaskExecution,
  TasksRepository,
} from '@punctual/db';
import { isExclusive, type PlannedExecution, taskSchedule } from '@punctual/planning';
import { slotsBetween } from '@punctual/time';
import { InvalidTaskError, NotFoundError } from './errors.js';
import { TaskChanges } from './task-changes.js';
import { type LifecycleResult, TaskLifecycle } from './task-lifecycle.js';

/** Operator actions on a task's runs: pause, resume (with catch-up), trigger now, backfill. */
@Injectable()
export class TaskRunsService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionTransitionsRepository,
    private readonly lifecycle: TaskLifecycle,
    private readonly changes: TaskChanges,
    private readonly clock: ClockService,
    private readonly room: HistoryRoom,
    private readonly retention: HistoryRetention,
  ) {}

  /**
   * Pauses a task: no new slots; slots due and not started end `skipped(paused)`. Executions in
   * progress finish their slot, unless `cancel` asks to cancel them too.
   */
  async pause(name: string, actor: Principal, options: { cancel?: boolean; note?: string } = {}): Promise<Task> {
    const now = this.clock.date();
    return this.locked(name, actor, 'task.pause', (tx, existing) =>
      this.lifecycle.pause(tx, existing, now, options.cancel ?? false, options.note),
    );
  }

  /** Resumes a paused task; `catchUp` decides the slots of the pause (see {@link TaskLifecycle.resume}). */
  async resume(name: string, actor: Principal, catchUp?: CatchUp): Promise<Task> {
    const now = this.clock.date();
    return this.locked(name, actor, 'task.resume', async (tx, existing) => ({
      task: await this.lifecycle.resume(tx, existing, now, catchUp),
      cancelledRunning: [],
    }));
  }

  /** Runs a task now, once, outside its schedule (optionally with another payload). */
  async trigger(name: string, actor: Principal, payload?: unknown): Promise<TaskExecution> {
    const task = await this.tasks.findByName(name);
    if (!task) throw new NotFoundError('task', name);
    // The slot of a manual run is the instant it was asked for; a same-millisecond twin moves on,
    // and so does one on an instant of the schedule (planned yet or not): the slot keeps its own run.
    const schedule = taskSchedule(task);
    for (let offset = 0; ; offset += 1) {
      const at = new Date(this.clock.now() + offset);
      if (slotsBetween(schedule, new Date(at.getTime() - 1), at, 1).some((slot) => slot.getTime() === at.getTime()))
        continue;
      const execution = await this.room.withRoom(() =>
        this.executions.insertManualRun(this.row(task, at, at, 'manual'), payload, this.prisma),
      );
      if (execution) {
        await this.changes.record(this.prisma, actor, 'task.trigger', name, null, null);
        await this.changes.announce([], [task.id]);
        return execution;
      }
    }
  }

  /** Plans the schedule's slots in `[from, to]` as backfill runs, now. Returns how many were new. */
  async backfill(name: string, actor: Principal, from: Date, to: Date, maxRuns = BACKFILL_DEFAULT): Promise<number> {
    const now = this.clock.date();
    if (to.getTime() < from.getTime()) throw new InvalidTaskError('to', 'to must not be before from', 'invalid_range');
    if (to.getTime() > now.getTime())
      throw new InvalidTaskError(
        'to',
        'to must not be in the future: future slots are planned by the schedule',
        'invalid_range',
      );
    const task = await this.tasks.findByName(name);
    if (!task) throw new NotFoundError('task', name);
    // A slot older than the history kept may have run and been pruned: planned again, it would run twice.
    const keptMs = await this.retention.historyMsOf(splitQualifiedName(task.name).namespace);
    const oldestKept = new Date(now.getTime() - keptMs);
    if (from.getTime() < oldestKept.getTime())
      throw new InvalidTaskError(
        'from',
        `from is before the oldest slot kept (${oldestKept.toISOString()}, the history being kept ${formatDuration(keptMs)}): a slot older than that may have run, and its run was pruned`,
        'beyond_retention',
      );
    const slots = slotsBetween(taskSchedule(task), new Date(from.getTime() - 1), to, Math.min(maxRuns, BACKFILL_MAX));
    // One millisecond apart, in slot order: they run one after another, oldest first.
    const rows = slots.map((slot, i) => this.row(task, slot, new Date(now.getTime() + i), 'backfill'));
    // A slot missed or skipped has its row: the backfill runs it as that row.
    const planned = await this.room.withRoom(() =>
      this.prisma.$transaction(
        async (tx) =>
          (await this.executions.insertPlanned(rows, tx)).length +
          (await this.executions.backfillDecided(rows, tx)).length,
      ),
    );
    await this.changes.record(this.prisma, actor, 'task.backfill', name, null, null);
    await this.changes.announce([], [task.id]);
    return planned;
  }

  private row(task: Task, slot: Date, fireAt: Date, trigger: 'manual' | 'backfill'): PlannedExecution {
    return {
      id: executionIdFor(slot),
      taskId: task.id,
      taskName: task.name,
      scheduledFor: slot,
      fireAt,
      trigger,
      status: 'scheduled',
      taskVersion: task.planVersion,
      exclusive: isExclusive(task.overlap),
      handler: task.handler,
    };
  }

  private async locked(
    name: string,
    actor: Principal,
    action: string,
    apply: (tx: Db, existing: Task) => Promise<LifecycleResult>,
  ): Promise<Task> {
    const result = await this.room.withRoom(() =>
      this.prisma.$transaction(async (tx) => {
        const existing = await this.tasks.lockByName(name, tx);
        if (!existing) throw new NotFoundError('task', name);
        const after = await apply(tx, existing);
        await this.changes.record(tx, actor, action, name, existing, after.task);
        return after;
      }),
    );
    await this.changes.announce(result.cancelledRunning, [result.task.id]);
    return result.task;
  }
}
