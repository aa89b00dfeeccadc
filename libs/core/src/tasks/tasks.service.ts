import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type Db, ExecutionsRepository, PrismaService, type Task, TaskNameTakenError, TasksRepository } from '@punctual/db';
import { RedisService } from '@punctual/redis';
import { TaskNotFoundError } from '../errors.js';
import { planTaskSlots } from '../planning/slot-planner.js';
import { taskSchedule } from './task-schedule.js';
import { newTaskSecret, type TaskDefinition, toTaskDefinition } from './task-definition.js';
import type { TaskInput } from './task-input.js';
import { TASKS_CHANGED_CHANNEL } from './tasks-changed.js';

/** Fields whose change makes already-planned executions stale (they end `skipped(task_changed)`). */
const PLAN_FIELDS = ['scheduleKind', 'cron', 'rrule', 'runAt', 'everyMs', 'timezone', 'startAt', 'endAt', 'jitterMs', 'dstGap', 'dstOverlap', 'handler'] as const;

export type CatchUp = 'skip' | 'latest' | 'all';
const CATCH_UP_MISFIRE = { skip: 'skip', latest: 'run_once', all: 'run_all' } as const;
/** Slots of a pause examined on resume; older ones are counted as missed without a row. */
const RESUME_SLOT_LIMIT = 100_000;

/** Task lifecycle for the admin API. Every change is announced to the leader on `tasks-changed`. */
@Injectable()
export class TasksService {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionsRepository,
    private readonly redis: RedisService,
  ) {}

  /** Creates a task; the HMAC secret is returned once, here. Throws `TaskNameTakenError`. */
  async create(input: TaskInput): Promise<{ task: Task; secret: string }> {
    const now = new Date();
    const secret = newTaskSecret();
    const task = await this.tasks.create({ ...toTaskDefinition(input, now), secret, createdAt: now, updatedAt: now });
    await this.announce();
    return { task, secret };
  }

  /** Creates or replaces the task named `name` (idempotent). */
  async put(name: string, input: TaskInput): Promise<{ task: Task; created: boolean; secret?: string }> {
    const now = new Date();
    const result = await this.prisma.$transaction(async (tx) => {
      const existing = await this.tasks.lockByName(tx, name);
      if (!existing) return null;
      const definition = toTaskDefinition({ ...input, name }, now, existing.startAt ?? existing.createdAt);
      return { task: await this.replace(tx, existing, definition), created: false };
    });
    if (!result) {
      try {
        return { ...(await this.create({ ...input, name })), created: true };
      } catch (error) {
        // Lost a race with a concurrent create of the same name: replace what won.
        if (error instanceof TaskNameTakenError) return this.put(name, input);
        throw error;
      }
    }
    await this.announce();
    return result;
  }

  get(name: string): Promise<Task> {
    return this.tasks.findByName(name).then((task) => task ?? Promise.reject(new TaskNotFoundError(name)));
  }

  /** Deletes a task: its pending executions are cancelled, its history is kept. */
  async delete(name: string): Promise<void> {
    const deleted = await this.prisma.$transaction(async (tx) => {
      const task = await this.tasks.lockByName(tx, name);
      if (!task) return false;
      await this.executions.endPendingOfTask(tx, task.id, 'cancelled', 'task_deleted');
      await this.tasks.delete(tx, task.id);
      return true;
    });
    if (!deleted) throw new TaskNotFoundError(name);
    await this.announce();
  }

  /** Pauses a task: no new slots are planned and planned ones end `skipped(paused)`. */
  async pause(name: string): Promise<Task> {
    const task = await this.prisma.$transaction(async (tx) => {
      const existing = await this.tasks.lockByName(tx, name);
      if (!existing) throw new TaskNotFoundError(name);
      if (existing.status !== 'active') return existing;
      await this.executions.endPendingOfTask(tx, existing.id, 'skipped', 'paused');
      return this.tasks.update(tx, existing.id, { status: 'paused' });
    });
    await this.announce();
    return task;
  }

  /**
   * Resumes a paused task. The slots that fell due while it was paused are decided by `catchUp`
   * (default: the task's misfire policy): `skip` records them all as `missed`, `latest` runs the
   * most recent one now, `all` runs them (at most CATCHUP_MAX; the rest `missed`).
   */
  async resume(name: string, catchUp?: CatchUp): Promise<Task> {
    const now = new Date();
    const task = await this.prisma.$transaction(async (tx) => {
      const existing = await this.tasks.lockByName(tx, name);
      if (!existing) throw new TaskNotFoundError(name);
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
    await this.announce();
    return task;
  }

  private async replace(tx: Db, existing: Task, definition: TaskDefinition): Promise<Task> {
    const planChanged = PLAN_FIELDS.some((field) => comparable(existing[field]) !== comparable(definition[field]));
    if (planChanged) {
      // Slots planned under the old definition must not run with it; the cursor restarts from now.
      await this.executions.endPendingOfTask(tx, existing.id, 'skipped', 'task_changed');
      return this.tasks.update(tx, existing.id, { ...definition, lastScheduledFor: null });
    }
    // Same slots: keep the cursor where planning left it.
    const { nextRunAt: _ignored, status, ...rest } = definition;
    const keepStatus = existing.status === 'completed' ? 'completed' : status;
    const updated = await this.tasks.update(tx, existing.id, { ...rest, status: keepStatus });
    await this.executions.adoptTaskVersion(tx, existing.id, updated.version);
    return updated;
  }

  private async announce(): Promise<void> {
    await this.redis.client.publish(this.redis.key(TASKS_CHANGED_CHANNEL), '1').catch(() => undefined);
  }
}

function comparable(value: unknown): string {
  return value instanceof Date ? value.toISOString() : String(value ?? '');
}
