import { Injectable } from '@nestjs/common';
import { type Db, ExecutionsRepository, PrismaService, type Task, TaskNameTakenError, TasksRepository } from '@punctual/db';
import type { Principal } from '../auth/api-keys.service.js';
import { TaskNotFoundError, VersionConflictError } from '../errors.js';
import { newTaskSecret, type TaskDefinition, toTaskDefinition } from './task-definition.js';
import type { TaskInput } from './task-input.js';
import { mergeTaskPatch, type TaskPatch } from './task-patch.js';
import { presentTask } from './task.presenter.js';
import { TaskChanges } from './task-changes.js';

/** Fields whose change makes already-planned executions stale (they end `skipped(task_changed)`). */
const PLAN_FIELDS = ['scheduleKind', 'cron', 'rrule', 'runAt', 'everyMs', 'timezone', 'startAt', 'endAt', 'jitterMs', 'dstGap', 'dstOverlap', 'handler'] as const;

/** Task definitions for the admin API: create, replace, patch, delete — audited and announced. */
@Injectable()
export class TasksService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionsRepository,
    private readonly changes: TaskChanges,
  ) {}

  get(name: string): Promise<Task> {
    return this.tasks.findByName(name).then((task) => task ?? Promise.reject(new TaskNotFoundError(name)));
  }

  /** Creates a task; the HMAC secret is returned once, here. Throws `TaskNameTakenError`. */
  async create(input: TaskInput, actor: Principal): Promise<{ task: Task; secret: string }> {
    const now = new Date();
    const secret = newTaskSecret();
    const definition = toTaskDefinition(input, now);
    const task = await this.prisma.$transaction(async (tx) => {
      const created = await this.tasks.create({ ...definition, secret, createdAt: now, updatedAt: now }, tx);
      await this.changes.record(tx, actor, 'task.create', created.name, null, created);
      return created;
    });
    await this.changes.announce();
    return { task, secret };
  }

  /** Creates or replaces the task named `name` (idempotent). */
  async put(name: string, input: TaskInput, actor: Principal): Promise<{ task: Task; created: boolean; secret?: string }> {
    const replaced = await this.change(name, actor, 'task.replace', undefined, () => ({ ...input, name }));
    if (replaced) return { task: replaced, created: false };
    try {
      return { ...(await this.create({ ...input, name }, actor)), created: true };
    } catch (error) {
      // Lost a race with a concurrent create of the same name: replace what won.
      if (error instanceof TaskNameTakenError) return this.put(name, input, actor);
      throw error;
    }
  }

  /** Applies a partial update; with `expectedVersion` (If-Match) a concurrent change is a conflict. */
  async patch(name: string, patch: TaskPatch, actor: Principal, expectedVersion?: number): Promise<Task> {
    // Merge over the stored payload, not the shown one: secret fields are masked when shown.
    const task = await this.change(name, actor, 'task.update', expectedVersion, (existing) => mergeTaskPatch({ ...presentTask(existing), payload: existing.payload }, patch, name));
    if (!task) throw new TaskNotFoundError(name);
    return task;
  }

  /** Deletes a task: its pending executions are cancelled, its history is kept. */
  async delete(name: string, actor: Principal): Promise<void> {
    const deleted = await this.prisma.$transaction(async (tx) => {
      const task = await this.tasks.lockByName(tx, name);
      if (!task) return false;
      await this.executions.endPendingOfTask(tx, task.id, 'cancelled', 'task_deleted');
      await this.tasks.delete(tx, task.id);
      await this.changes.record(tx, actor, 'task.delete', name, task, null);
      return true;
    });
    if (!deleted) throw new TaskNotFoundError(name);
    await this.changes.announce();
  }

  /** Replaces an existing task's definition under its row lock; null when there is no such task. */
  private async change(name: string, actor: Principal, action: string, expectedVersion: number | undefined, input: (existing: Task) => TaskInput): Promise<Task | null> {
    const now = new Date();
    const task = await this.prisma.$transaction(async (tx) => {
      const existing = await this.tasks.lockByName(tx, name);
      if (!existing) return null;
      if (expectedVersion !== undefined && existing.version !== expectedVersion) throw new VersionConflictError(name, existing.version, expectedVersion);
      const definition = toTaskDefinition(input(existing), now, existing.startAt ?? existing.createdAt);
      const updated = await this.replace(tx, existing, definition);
      await this.changes.record(tx, actor, action, name, existing, updated);
      return updated;
    });
    if (task) await this.changes.announce();
    return task;
  }

  private async replace(tx: Db, existing: Task, definition: TaskDefinition): Promise<Task> {
    const planChanged = PLAN_FIELDS.some((field) => comparable(existing[field]) !== comparable(definition[field]));
    if (planChanged) {
      // Slots planned under the old definition must not run with it; the cursor restarts from now.
      await this.executions.endPendingOfTask(tx, existing.id, 'skipped', 'task_changed');
      return this.tasks.update(tx, existing.id, { ...definition, lastScheduledFor: null });
    }
    // Same slots: keep the cursor where planning left it, and let pending runs adopt the new version.
    const { nextRunAt: _ignored, status, ...rest } = definition;
    const keepStatus = existing.status === 'completed' ? 'completed' : status;
    const updated = await this.tasks.update(tx, existing.id, { ...rest, status: keepStatus });
    await this.executions.adoptTaskVersion(tx, existing.id, updated.version);
    return updated;
  }
}

function comparable(value: unknown): string {
  return value instanceof Date ? value.toISOString() : String(value ?? '');
}
