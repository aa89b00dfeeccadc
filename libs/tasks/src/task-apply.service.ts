import { Injectable } from '@nestjs/common';
import {
  APPLY_MANAGED_BY_DEFAULT,
  HORIZON_DEFAULT,
  type CalendarApplyItem,
  type TaskApplyItem,
  type TaskApplyRequest,
  type TaskApplyResponse,
} from '@punctual/contract';
import {
  CalendarsRepository,
  HistoryRetention,
  HistoryRoom,
  PrismaService,
  type Task,
  TasksRepository,
} from '@punctual/db';
import { checkRetentionCovers } from './retention-check.js';
import type { Principal } from '@punctual/auth';
import { ClockService } from '@punctual/clock';
import { type DesiredCalendar, desiredCalendars, diffCalendars } from './calendar-apply.js';
import { CalendarsService } from './calendars.service.js';
import { TaskNotManagedError } from './errors.js';
import { batchDefinitions, checkDistinctNames, checkManager, newTaskRow } from './task-batch.js';
import { TaskChanges } from './task-changes.js';
import { asDryRun, ChangePreviews, compareSnapshots } from './change-preview.js';
import { excludedCalendars, type TaskDefinition } from './task-definition.js';
import { diffTasks, type TaskState } from './task-diff.js';
import { TaskLifecycle } from './task-lifecycle.js';
import { presentDefinition } from './task.presenter.js';

/** The diff's items: what an apply does to each task. */
type ApplyPlan = ReturnType<typeof diffTasks>['items'];
/** What writing (or previewing) an apply's tasks works with, inside its transaction. */
interface TaskWrite {
  tx: Parameters<TaskLifecycle['edit']>[0];
  actor: Principal;
  /** The tasks as they are, by name. */
  existing: Map<string, Task>;
  /** The file's tasks by name: each one's new row and its checked definition. */
  desired: Map<string, { row: Task; definition: TaskDefinition }>;
  now: Date;
}

/** What an apply did, and the handlers of the tasks it wrote (for warnings). */
export type TaskApplyResult = Omit<TaskApplyResponse, 'warnings'> & { handlers: string[] };

/**
 * Tasks as code (DESIGN §12): makes the tasks one manager manages what a file declares, in one
 * transaction under the rows' locks, with one audit entry per task changed. Only what differs is
 * written, so applying the same file twice changes nothing the second time.
 */
@Injectable()
export class TaskApplyService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tasks: TasksRepository,
    private readonly lifecycle: TaskLifecycle,
    private readonly changes: TaskChanges,
    private readonly clock: ClockService,
    private readonly calendars: CalendarsRepository,
    private readonly calendarWriter: CalendarsService,
    private readonly previews: ChangePreviews,
    private readonly room: HistoryRoom,
    private readonly retention: HistoryRetention,
  ) {}

  /** `request` names tasks and calendars by their keys in `namespace` (see `qualifiedName`); only that namespace is pruned. */
  async apply(request: TaskApplyRequest, actor: Principal, namespace: string): Promise<TaskApplyResult> {
    const managedBy = request.managedBy ?? APPLY_MANAGED_BY_DEFAULT;
    checkDistinctNames(request.tasks);
    checkManager(request.tasks, managedBy);
    const declaredCalendars = request.calendars && desiredCalendars(request.calendars, managedBy);
    const now = this.clock.date();
    const cancelled: string[] = [];
    let calendarItems: CalendarApplyItem[] = [];
    // Writes executions (re-planned slots): room for them is made when the transaction finds none.
    const transaction = asDryRun(request.dryRun ?? false, () =>
      this.room.withRoom(() =>
        this.prisma.$transaction(
          async (tx) => {
            // Calendars first: the tasks of the file may exclude the ones it creates or changes.
            const calendarPlan = declaredCalendars
              ? await this.writeCalendars(
                  tx,
                  actor,
                  declaredCalendars,
                  { managedBy, namespace, prune: request.prune ?? false, dryRun: request.dryRun ?? false },
                  now,
                  cancelled,
                )
              : null;
            calendarItems = calendarPlan?.items ?? [];
            // A dry run locks no task for the whole apply: each is locked only while it is previewed.
            const names = request.tasks.map((s) => s.name);
            const locked = request.dryRun
              ? await this.tasks.byNamesOrManager(names, managedBy, namespace, tx)
              : await this.tasks.lockByNamesOrManager(names, managedBy, namespace, tx);
            const existing = new Map(locked.map((t) => [t.name, t]));
            // Whether a task is paused is the operator's unless the file says it.
            const specs = request.tasks.map((spec) => ({
              ...spec,
              managedBy,
              paused: spec.paused ?? existing.get(spec.name)?.status === 'paused',
            }));
            const definitions = batchDefinitions(
              specs,
              existing,
              now,
              await this.calendars.lockForUse(excludedCalendars(specs), tx),
            );
            await checkRetentionCovers(this.retention, definitions);
            const rows = definitions.map((definition) => newTaskRow(definition, now));
            const diff = diffTasks(rows.map(stateOf), locked.map(stateOf), {
              managedBy,
              prune: request.prune ?? false,
            });
            if (diff.notManaged.length) throw new TaskNotManagedError(managedBy, diff.notManaged);
            const byName = new Map(
              specs.map((spec, index) => [spec.name, { row: rows[index]!, definition: definitions[index]! }]),
            );
            const writing: TaskWrite = { tx, actor, existing, desired: byName, now };
            if (request.dryRun) throw new DryRun(await this.preview(writing, diff.items));
            const items = await this.write(writing, diff.items, cancelled);
            // Pruned calendars go last, after the pruned tasks that excluded them.
            for (const item of calendarItems)
              if (item.action === 'delete') await this.calendarWriter.remove(tx, actor, item.name);
            return items;
          },
          // A thousand tasks take longer than Prisma's default of 5 s on a busy machine.
          { timeout: 60_000, maxWait: 10_000 },
        ),
      ),
    );
    const result = await transaction.catch((error: unknown) => {
      if (error instanceof DryRun) return error.items;
      throw error;
    });
    const changedAny = [...result, ...calendarItems].some((item) => item.action !== 'unchanged');
    if (!request.dryRun && changedAny) await this.changes.announce(cancelled, 'all');
    const count = (action: TaskApplyItem['action']) => result.filter((item) => item.action === action).length;
    const [created, updated, deleted] = [count('create'), count('update'), count('delete')];
    const handlers = request.tasks
      .filter((spec) => result.some((item) => item.name === spec.name && item.action !== 'unchanged'))
      .map((spec) => spec.handler);
    return {
      managedBy,
      dryRun: request.dryRun ?? false,
      changed: created + updated + deleted,
      created,
      updated,
      deleted,
      unchanged: count('unchanged'),
      items: result,
      calendars: calendarItems,
      handlers,
    };
  }

  /**
   * Creates and updates the declared calendars (re-planning the tasks that exclude them) and plans
   * the deletes of the ones pruned; a declared calendar of another manager refuses the apply (409).
   */
  private async writeCalendars(
    tx: Parameters<TaskLifecycle['edit']>[0],
    actor: Principal,
    desired: DesiredCalendar[],
    { managedBy, namespace, prune, dryRun }: { managedBy: string; namespace: string; prune: boolean; dryRun: boolean },
    now: Date,
    cancelled: string[],
  ): Promise<{ items: CalendarApplyItem[] }> {
    const current = await this.calendars.lockForApply(
      desired.map((c) => c.name),
      managedBy,
      namespace,
      tx,
    );
    const plan = diffCalendars(desired, current, managedBy, prune);
    if (plan.notManaged.length) {
      throw new TaskNotManagedError(
        managedBy,
        plan.notManaged.map((c) => ({ ...c, kind: 'calendar' as const })),
      );
    }
    const versions = new Map(current.map((c) => [c.name, c.version]));
    const items: CalendarApplyItem[] = [];
    for (const item of plan.items) {
      if (item.action === 'create' || item.action === 'update') {
        const { name, ...fields } = desired.find((c) => c.name === item.name)!;
        // A dry run previews the tasks excluding the calendar one at a time (see CalendarsService.write).
        const written = await this.calendarWriter.write(tx, actor, name, fields, now, dryRun ? PREVIEW : undefined);
        cancelled.push(...written.cancelled);
        // A dry run writes too (its tasks may exclude what it creates), then rolls back: it answers the versions as they are.
        if (!dryRun) versions.set(name, written.calendar.version);
      }
      items.push({ ...item, version: item.action === 'delete' ? null : (versions.get(item.name) ?? null) });
    }
    return { items };
  }

  /**
   * A dry run's writes, each undone as soon as it is made (see ChangePreviews.undone), so that no
   * task's rows are held for the whole apply: an update is previewed under its own task's lock; the
   * deletes and creates are made together, as {@link write} makes them (a file that swaps tasks at
   * its namespace's `maxTasks` fits as it does when applied). Answers each item with its effects.
   */
  private async preview(writing: TaskWrite, plan: ApplyPlan): Promise<TaskApplyItem[]> {
    const { tx, existing, desired, now } = writing;
    const effects = new Map<string, TaskApplyItem['effects']>();
    for (const item of plan)
      if (item.action === 'update')
        effects.set(
          item.name,
          await this.previews.undone(tx, async () => {
            const locked = (await this.tasks.lockByName(item.name, tx)) ?? existing.get(item.name)!;
            const before = await this.previews.snapshot(tx, locked);
            const changed = await this.lifecycle.edit(tx, locked, desired.get(item.name)!.definition, now);
            return compareSnapshots(before, await this.previews.snapshot(tx, changed.task), now, HORIZON_DEFAULT);
          }),
        );
    const rest = plan.filter((item) => item.action !== 'update');
    await this.previews.undone(tx, async () => {
      await this.write(writing, rest, []);
      for (const item of rest)
        if (item.action === 'create') {
          const created = desired.get(item.name)!.row;
          effects.set(
            item.name,
            compareSnapshots(null, await this.previews.snapshot(tx, created), now, HORIZON_DEFAULT),
          );
        }
    });
    return plan.map((item) => {
      const changes = effects.get(item.name);
      return { ...item, version: existing.get(item.name)?.version ?? null, ...(changes && { effects: changes }) };
    });
  }

  /**
   * Writes the plan: new rows in one insert, updates as a replace does, deletes as a delete does;
   * one audit entry each. The deletes go first, so a file that swaps tasks at its namespace's
   * `maxTasks` fits as its end state does.
   */
  private async write(
    { tx, actor, existing, desired, now }: TaskWrite,
    plan: ApplyPlan,
    cancelled: string[],
  ): Promise<TaskApplyItem[]> {
    const fresh = plan.filter((item) => item.action === 'create').map((item) => desired.get(item.name)!.row);
    const versions = await this.changes.firstVersions(
      fresh.map((t) => t.name),
      tx,
    );
    for (const task of fresh) task.version = versions.get(task.name) ?? 1;
    for (const item of plan)
      if (item.action === 'delete') {
        const before = existing.get(item.name)!;
        cancelled.push(...(await this.lifecycle.cancelAll(tx, before, now)));
        await this.tasks.delete(before.id, tx);
      }
    await this.tasks.insertMany(fresh, tx);
    const audit: Parameters<TaskChanges['recordMany']>[2] = fresh.map((task) => ({
      action: 'task.create',
      target: task.name,
      before: null,
      after: task,
    }));
    const items: TaskApplyItem[] = [];
    for (const item of plan) {
      const before = existing.get(item.name) ?? null;
      if (item.action === 'update') {
        const changed = await this.lifecycle.edit(tx, before!, desired.get(item.name)!.definition, now);
        cancelled.push(...changed.cancelledRunning);
        audit.push({ action: 'task.update', target: item.name, before, after: changed.task });
        items.push({ ...item, version: changed.task.version });
      } else if (item.action === 'delete') {
        audit.push({ action: 'task.delete', target: item.name, before, after: null });
        items.push({ ...item, version: null });
      } else {
        const created = item.action === 'create' ? desired.get(item.name)!.row : null;
        items.push({
          ...item,
          version: created?.version ?? before!.version,
          ...(created && { secret: created.secret }),
        });
      }
    }
    await this.changes.recordMany(tx, actor, audit);
    return items;
  }
}

/** A task as an apply compares it: its JSON, but the payload as stored (the shown one masks secrets). */
function stateOf(task: Task): TaskState {
  const { name, description, handler, secretFields, schedule, policy, notify, paused, labels, managedBy, slo } =
    presentDefinition(task);
  return {
    name,
    description,
    handler,
    payload: task.payload,
    secretFields,
    schedule,
    policy,
    notify,
    paused,
    labels,
    managedBy,
    slo,
  };
}

const PREVIEW = { horizon: HORIZON_DEFAULT };

/** Carries a dry run's answer out of its transaction, which it rolls back. */
class DryRun extends Error {
  constructor(readonly items: TaskApplyItem[]) {
    super('dry run');
  }
}
