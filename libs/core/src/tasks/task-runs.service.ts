import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { ExecutionsRepository, type PlannedExecution, PrismaService, type Task, type TaskExecution, TasksRepository } from '@punctual/db';
import { slotsBetween } from '@punctual/time';
import type { Principal } from '../auth/api-keys.service.js';
import { InvalidTaskError, TaskNotFoundError } from '../errors.js';
import { planTaskSlots } from '../planning/slot-planner.js';
import { TaskChanges } from './task-changes.js';
import { taskSchedule } from './task-schedule.js';

export type CatchUp = 'skip' | 'latest' | 'all';
const CATCH_UP_MISFIRE = { skip: 'skip', latest: 'run_once', all: 'run_all' } as const;
/** Slots of a pause examined on resume; older ones are counted as missed without a row. */
const RESUME_SLOT_LIMIT = 100_000;
export const BACKFILL_MAX = 1_000;

/** Operator actions on a task's runs: pause, resume (with catch-up), trigger now, backfill. */
@Injectable()
export class TaskRunsService {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionsRepository,
    private readonly changes: TaskChanges,
  ) {}

  /** Pauses a task: no new slots are planned and planned ones end `skipped(paused)`. */
  async pause(name: string, actor: Principal): Promise<Task> {
    return this.locked(name, actor, 'task.pause', async (tx, existing) => {
      if (existing.status !== 'active') return existing;
      await this.executions.endPendingOfTask(tx, existing.id, 'skipped', 'paused');
      return this.tasks.update(tx, existing.id, { status: 'paused' });
    });
  }

  /**
   * Resumes a paused task. The slots that fell due while it was paused are decided by `catchUp`
   * (default: the task's misfire policy): `skip` records them all as `missed`, `latest` runs the
   * most recent one now, `all` runs them (at most CATCHUP_MAX; the rest `missed`).
   */
  async resume(name: string, actor: Principal, catchUp?: CatchUp): Promise<Task> {
    const now = new Date();
    return this.locked(name, actor, 'task.resume', async (tx, existing) => {
      if (existing.status !== 'paused') return existing;
      const misfire = catchUp ? CATCH_UP_MISFIRE[catchUp] : existing.misfire;
      // Activate first: the catch-up rows carry the new version, so workers accept them.
      const active = await this.tasks.update(tx, existing.id, { status: 'active' });
      // Every slot of the pause is late: plan them now, as of now, with no lookahead.
      const plan = planTaskSlots({ ...active, misfire, maxDelayMs: 0 }, taskSchedule(active), now, {
        lookaheadMs: 0,
        catchupMax: this.config.catchupMax,
        maxSlotsPerPass: RESUME_SLOT_LIMIT,
        newId: randomUUID,
      });
      await this.executions.insertPlanned(tx, plan.executions);
      // Past the last slot examined, continue from now: a backlog over the limit is only counted.
      let cursor = plan.advance.nextRunAt;
      if (cursor && cursor.getTime() <= now.getTime()) cursor = taskSchedule(active).next(now);
      await this.tasks.advanceCursors(tx, [{ ...plan.advance, nextRunAt: cursor }]);
      return (await this.tasks.findById(existing.id, tx))!;
    });
  }

  /** Runs a task now, once, outside its schedule (optionally with another payload). */
  async trigger(name: string, actor: Principal, payload?: unknown): Promise<TaskExecution> {
    const task = await this.tasks.findByName(name);
    if (!task) throw new TaskNotFoundError(name);
    // The slot of a manual run is the instant it was asked for; a same-millisecond twin moves on.
    for (let offset = 0; ; offset += 1) {
      const at = new Date(Date.now() + offset);
      const [execution] = await this.executions.insertPlanned(this.prisma, [this.row(task, at, at, 'manual')], payload);
      if (execution) {
        await this.changes.record(this.prisma, actor, 'task.trigger', name, null, null);
        await this.changes.announce();
        return execution;
      }
    }
  }

  /** Plans the schedule's slots in `[from, to]` as backfill runs, now. Returns how many were new. */
  async backfill(name: string, actor: Principal, from: Date, to: Date, maxRuns = 100): Promise<number> {
    if (to.getTime() < from.getTime()) throw new InvalidTaskError('to', 'to must not be before from', 'invalid_range');
    if (to.getTime() > Date.now()) throw new InvalidTaskError('to', 'to must not be in the future: future slots are planned by the schedule', 'invalid_range');
    const task = await this.tasks.findByName(name);
    if (!task) throw new TaskNotFoundError(name);
    const slots = slotsBetween(taskSchedule(task), new Date(from.getTime() - 1), to, Math.min(maxRuns, BACKFILL_MAX));
    const now = new Date();
    const inserted = await this.executions.insertPlanned(this.prisma, slots.map((slot) => this.row(task, slot, now, 'backfill')));
    await this.changes.record(this.prisma, actor, 'task.backfill', name, null, null);
    await this.changes.announce();
    return inserted.length;
  }

  private row(task: Task, slot: Date, fireAt: Date, trigger: 'manual' | 'backfill'): PlannedExecution {
    return {
      id: randomUUID(), taskId: task.id, taskName: task.name, scheduledFor: slot, fireAt, trigger,
      status: 'scheduled', taskVersion: task.version, exclusive: task.overlap !== 'allow',
    };
  }

  private async locked(name: string, actor: Principal, action: string, apply: (tx: Parameters<Parameters<PrismaService['$transaction']>[0]>[0], existing: Task) => Promise<Task>): Promise<Task> {
    const task = await this.prisma.$transaction(async (tx) => {
      const existing = await this.tasks.lockByName(tx, name);
      if (!existing) throw new TaskNotFoundError(name);
      const after = await apply(tx, existing);
      await this.changes.record(tx, actor, action, name, existing, after);
      return after;
    });
    await this.changes.announce();
    return task;
  }
}
