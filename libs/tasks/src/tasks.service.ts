import { Injectable } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import { ClockService } from '@punctual/clock';
import {
  CalendarsRepository,
  type Db,
  HistoryRetention,
  HistoryRoom,
  PrismaService,
  type Task,
  TaskNameTakenError,
  TasksRepository,
  TaskVersionsRepository,
} from '@punctual/db';
import { ManagedElsewhereError, NotFoundError, VersionConflictError } from './errors.js';
import { batchDefinitions, type BatchItemResult, checkDistinctNames, newTaskRow } from './task-batch.js';
import { checkRetentionCovers } from './retention-check.js';
import { excludedCalendars, newTaskSecret, type TaskDefinition, toTaskDefinition } from './task-definition.js';
import type { TaskPatch, TaskSpec as TaskInput } from '@punctual/contract';
import { TaskLifecycle } from './task-lifecycle.js';
import { mergeTaskPatch } from './task-patch.js';
import { presentDefinition, type TaskDefinitionJson } from './task.presenter.js';
import { TaskChanges } from './task-changes.js';
import { ChangePreviews, compareSnapshots } from './change-preview.js';
import type { TaskChanges as Changes } from '@punctual/contract';

/** A dry run's reach: how many of the next fire times it compares. */
export interface DryRun {
  horizon: number;
}

/** How a change is recorded: its action (default per method) and the request's reason. */
export interface Recorded {
  action?: string;
  reason?: string;
  /** A task restored: when it was first created (its `every` schedule keeps its phase from there). */
  createdAt?: Date;
}

/** Task definitions for the admin API: create, replace, patch, delete — audited and announced. */
@Injectable()
export class TasksService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly lifecycle: TaskLifecycle,
    private readonly changes: TaskChanges,
    private readonly clock: ClockService,
    private readonly calendars: CalendarsRepository,
    private readonly previews: ChangePreviews,
    private readonly versions: TaskVersionsRepository,
    private readonly room: HistoryRoom,
    private readonly retention: HistoryRetention,
  ) {}

  /** The calendars `specs` exclude, locked against a delete until the transaction ends. */
  calendarsOf(specs: Pick<TaskInput, 'schedule'>[], tx: Db) {
    return this.calendars.lockForUse(excludedCalendars(specs), tx);
  }

  get(name: string): Promise<Task> {
    return this.tasks.findByName(name).then((task) => task ?? Promise.reject(new NotFoundError('task', name)));
  }

  /** Creates a task; the HMAC secret is returned once, here. Throws `TaskNameTakenError`. */
  async create(
    input: TaskInput,
    actor: Principal,
    dryRun?: undefined,
    how?: Recorded,
  ): Promise<{ task: Task; secret: string }>;
  async create(
    input: TaskInput,
    actor: Principal,
    dryRun: DryRun,
    how?: Recorded,
  ): Promise<{ task: Task; changes: Changes }>;
  async create(
    input: TaskInput,
    actor: Principal,
    dryRun?: DryRun,
    how: Recorded = {},
  ): Promise<{ task: Task; secret?: string; changes?: Changes }> {
    const now = this.clock.date();
    const createdAt = how.createdAt ?? now;
    const secret = newTaskSecret();
    const body = async (tx: Db) => {
      const definition = toTaskDefinition(input, now, createdAt, null, await this.calendarsOf([input], tx));
      await checkRetentionCovers(this.retention, [definition]);
      const version = (await this.changes.firstVersions([input.name], tx)).get(input.name) ?? 1;
      const created = await this.tasks.create({ ...definition, secret, version, createdAt, updatedAt: now }, tx);
      await this.changes.record(tx, actor, how.action ?? 'task.create', created.name, null, created, how.reason);
      return {
        task: created,
        changes: dryRun && compareSnapshots(null, await this.previews.snapshot(tx, created), now, dryRun.horizon),
      };
    };
    if (dryRun) return this.previews.rolledBack(body) as Promise<{ task: Task; changes: Changes }>;
    const { task } = await this.room.withRoom(() => this.prisma.$transaction(body));
    // A new task has no executions yet: the leader plans it.
    await this.changes.announce([], []);
    return { task, secret };
  }

  /** Creates or replaces the task named `name` (idempotent). */
  async put(
    name: string,
    input: TaskInput,
    actor: Principal,
    dryRun?: DryRun,
    reason?: string,
  ): Promise<{ task: Task; created: boolean; secret?: string; changes?: Changes }> {
    const replaced = await this.change(
      name,
      actor,
      { action: 'task.replace', reason },
      undefined,
      (existing) => {
        // A task an apply manages is changed by that apply, not taken from it by a plain PUT.
        if (existing.managedBy !== null && input.managedBy !== existing.managedBy)
          throw new ManagedElsewhereError('task', name, existing.managedBy);
        return { ...input, name };
      },
      dryRun,
    );
    if (replaced) return { ...replaced, created: false };
    if (dryRun) return { ...(await this.create({ ...input, name }, actor, dryRun, { reason })), created: true };
    try {
      return { ...(await this.create({ ...input, name }, actor, undefined, { reason })), created: true };
    } catch (error) {
      // Lost a race with a concurrent create of the same name: replace what won.
      if (error instanceof TaskNameTakenError) return this.put(name, input, actor, undefined, reason);
      throw error;
    }
  }

  /**
   * Creates or replaces every task of `specs` in one transaction, all or nothing: new ones with
   * one multi-row insert, replaced ones as `put` replaces them (see {@link TaskLifecycle.edit});
   * one audit entry per task.
   */
  async batch(
    specs: TaskInput[],
    actor: Principal,
    dryRun?: DryRun,
    reason?: string,
  ): Promise<(BatchItemResult & { changes?: Changes })[]> {
    checkDistinctNames(specs);
    const now = this.clock.date();
    const cancelled: string[] = [];
    const body = async (tx: Db) => {
      const names = specs.map((s) => s.name);
      // A dry run locks no task for the whole batch: each is locked only while it is previewed.
      const existing = new Map(
        (dryRun
          ? await tx.task.findMany({ where: { name: { in: names } } })
          : await this.tasks.lockByNames(names, tx)
        ).map((t) => [t.name, t]),
      );
      const definitions = batchDefinitions(specs, existing, now, await this.calendarsOf(specs, tx));
      await checkRetentionCovers(this.retention, definitions);
      const fresh = specs.flatMap((spec, index) =>
        existing.has(spec.name) ? [] : [{ index, task: newTaskRow(definitions[index]!, now) }],
      );
      const versions = await this.changes.firstVersions(
        fresh.map((f) => f.task.name),
        tx,
      );
      for (const f of fresh) f.task.version = versions.get(f.task.name) ?? 1;
      await this.tasks.insertMany(
        fresh.map((f) => f.task),
        tx,
      );
      const out: BatchItemResult[] = fresh.map(({ index, task }) => ({
        index,
        task,
        created: true,
        secret: task.secret,
      }));
      const changes = new Map<string, Changes>();
      if (dryRun)
        for (const f of out)
          changes.set(
            f.task.name,
            compareSnapshots(null, await this.previews.snapshot(tx, f.task), now, dryRun.horizon),
          );
      for (const [index, spec] of specs.entries()) {
        const before = existing.get(spec.name);
        if (!before) continue;
        if (dryRun) {
          out.push({ index, ...(await this.previewEdit(tx, before, definitions[index]!, now, dryRun, changes)) });
          continue;
        }
        const changed = await this.lifecycle.edit(tx, before, definitions[index]!, now);
        cancelled.push(...changed.cancelledRunning);
        out.push({ index, task: changed.task, created: false });
      }
      out.sort((a, b) => a.index - b.index);
      await this.changes.recordMany(
        tx,
        actor,
        out.map((r) => ({
          action: r.created ? 'task.create' : 'task.replace',
          target: r.task.name,
          before: existing.get(r.task.name) ?? null,
          after: r.task,
        })),
        reason,
      );
      return dryRun ? out.map(({ secret: _, ...r }) => ({ ...r, changes: changes.get(r.task.name) })) : out;
    };
    // A thousand tasks take longer than Prisma's default of 5 s on a busy machine.
    const options = { timeout: 60_000, maxWait: 10_000 };
    if (dryRun) return this.previews.rolledBack(body, options);
    const results = await this.room.withRoom(() => this.prisma.$transaction(body, options));
    // Replaced tasks may have rows planned for slots already due; new ones have none.
    await this.changes.announce(
      cancelled,
      results.filter((r) => !r.created).map((r) => r.task.id),
    );
    return results;
  }

  /** Applies a partial update; with `expectedVersion` (If-Match) a concurrent change is a conflict. */
  async patch(
    name: string,
    patch: TaskPatch,
    actor: Principal,
    expectedVersion?: number,
    dryRun?: DryRun,
    reason?: string,
  ): Promise<{ task: Task; changes?: Changes }> {
    // Merge over the stored payload, not the shown one: secret fields are masked when shown.
    const changed = await this.change(
      name,
      actor,
      { action: 'task.update', reason },
      expectedVersion,
      (existing) => mergeTaskPatch({ ...presentDefinition(existing), payload: existing.payload }, patch, name),
      dryRun,
    );
    if (!changed) throw new NotFoundError('task', name);
    return changed;
  }

  /**
   * A batch dry run's preview of one task's edit, in a savepoint rolled back at once: the task's row
   * and its unfinished runs are locked only while it is previewed, not until the whole batch has
   * been (a claim of its due run waits milliseconds, not the batch). Its changes go to `changes`.
   */
  private async previewEdit(
    tx: Db,
    task: Task,
    definition: TaskDefinition,
    now: Date,
    dryRun: DryRun,
    changes: Map<string, Changes>,
  ): Promise<{ task: Task; created: false }> {
    return this.previews.undone(tx, async () => {
      const locked = (await this.tasks.lockByName(task.name, tx)) ?? task;
      const snapshot = await this.previews.snapshot(tx, locked);
      const changed = await this.lifecycle.edit(tx, locked, definition, now);
      changes.set(
        task.name,
        compareSnapshots(snapshot, await this.previews.snapshot(tx, changed.task), now, dryRun.horizon),
      );
      return { task: changed.task, created: false as const };
    });
  }

  /**
   * Makes a new version of the task equal to `version` (as `task_version` kept it, payload and all),
   * as a PUT of that definition would — but whether the task runs stays as it is: a paused task
   * stays paused (its note too), an active one active, whatever the version says. A deleted task is
   * created again from it (restored) as it was then, paused or not, with its first creation's
   * instant (an `every` schedule keeps its phase).
   */
  async rollback(
    name: string,
    version: number,
    actor: Principal,
    dryRun?: DryRun,
    reason?: string,
  ): Promise<{ task: Task; created: boolean; secret?: string; changes?: Changes }> {
    const kept = await this.versions.get(name, version);
    if (!kept) throw new NotFoundError('version', `${version} of task "${name}"`);
    const definition = kept.definition as unknown as TaskDefinitionJson;
    const spec = mergeTaskPatch(definition, {}, name);
    const replaced = await this.change(
      name,
      actor,
      { action: 'task.rollback', reason },
      undefined,
      (existing) => ({ ...spec, paused: existing.status === 'paused' }),
      dryRun,
    );
    if (replaced) return { ...replaced, created: false };
    const first = Date.parse(definition.createdAt);
    const restore = { action: 'task.restore', reason, createdAt: Number.isNaN(first) ? undefined : new Date(first) };
    if (dryRun) return { ...(await this.create(spec, actor, dryRun, restore)), created: true };
    return { ...(await this.create(spec, actor, undefined, restore)), created: true };
  }

  /**
   * Deletes a task: its planned slots still to come are withdrawn, every other unfinished execution
   * is cancelled (a running one's worker aborts it), its history is kept.
   */
  async delete(name: string, actor: Principal): Promise<void> {
    const cancelled = await this.prisma.$transaction(async (tx) => {
      const task = await this.tasks.lockByName(name, tx);
      if (!task) return null;
      const running = await this.lifecycle.cancelAll(tx, task, this.clock.date());
      await this.tasks.delete(task.id, tx);
      await this.changes.record(tx, actor, 'task.delete', name, task, null);
      return running;
    });
    if (!cancelled) throw new NotFoundError('task', name);
    await this.changes.announce(cancelled, []);
  }

  /**
   * Replaces an existing task's definition under its row lock, as of one instant (see
   * {@link TaskLifecycle.edit}); null when there is no such task.
   */
  private async change(
    name: string,
    actor: Principal,
    how: Required<Pick<Recorded, 'action'>> & Recorded,
    expectedVersion: number | undefined,
    input: (existing: Task) => TaskInput,
    dryRun?: DryRun,
  ): Promise<{ task: Task; changes?: Changes } | null> {
    const now = this.clock.date();
    const body = async (tx: Db) => {
      const existing = await this.tasks.lockByName(name, tx);
      if (!existing) return null;
      if (expectedVersion !== undefined && existing.version !== expectedVersion)
        throw new VersionConflictError(name, existing.version, expectedVersion);
      const before = dryRun && (await this.previews.snapshot(tx, existing));
      const spec = input(existing);
      const definition = toTaskDefinition(
        spec,
        now,
        existing.startAt ?? existing.createdAt,
        existing,
        await this.calendarsOf([spec], tx),
      );
      await checkRetentionCovers(this.retention, [definition]);
      const changed = await this.lifecycle.edit(tx, existing, definition, now);
      await this.changes.record(tx, actor, how.action, name, existing, changed.task, how.reason);
      return {
        ...changed,
        changes: before
          ? compareSnapshots(before, await this.previews.snapshot(tx, changed.task), now, dryRun!.horizon)
          : undefined,
      };
    };
    if (dryRun) return this.previews.rolledBack(body);
    const result = await this.room.withRoom(() => this.prisma.$transaction(body));
    if (result) await this.changes.announce(result.cancelledRunning, [result.task.id]);
    return result && { task: result.task };
  }
}
