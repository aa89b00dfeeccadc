import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import type { FireTime, PendingSlot, TaskChanges } from '@punctual/contract';
import {
  type Db,
  ExecutionTransitionsRepository,
  HistoryRoom,
  PrismaService,
  type Task,
  type UnstartedExecution,
} from '@punctual/db';
import { taskSchedule } from '@punctual/planning';
import { formatLocal, offsetAt, slotsBetween } from '@punctual/time';
import { upcomingFireTimes } from './schedule-preview.js';

const DAY = 86_400_000;

/** A task as a change found it or left it: its row, its planned executions, its runs in progress. */
export interface TaskSnapshot {
  task: Task;
  pending: UnstartedExecution[];
  running: { id: string; scheduledFor: Date; status: string }[];
}

/** Thrown to end a dry run's transaction: it carries the answer out and rolls everything back. */
const DRY_RUN = new AsyncLocalStorage<true>();

/** Whether the code runs inside a dry run's transaction (see {@link ChangePreviews.rolledBack}): its effects are not real. */
export function inDryRun(): boolean {
  return DRY_RUN.getStore() === true;
}

/** Runs `work` as a dry run when `dry` (a transaction the caller rolls back itself): see {@link inDryRun}. */
export function asDryRun<T>(dry: boolean, work: () => Promise<T>): Promise<T> {
  return dry ? DRY_RUN.run(true, work) : work();
}

class DryRunRollback<T> extends Error {
  constructor(readonly result: T) {
    super('dry run: rolled back');
  }
}

/**
 * Dry runs (DESIGN §7 "Previews"): the change is made for real inside a transaction that is then
 * rolled back, so what a preview says is what the change does — the same validation, re-planning
 * and withdrawals — and nothing is stored or announced. {@link compare} says what it did.
 */
@Injectable()
export class ChangePreviews {
  constructor(
    private readonly prisma: PrismaService,
    private readonly executions: ExecutionTransitionsRepository,
    private readonly room: HistoryRoom,
  ) {}

  /**
   * Runs `change` in a transaction that is always rolled back; answers what it returned. Inside it
   * {@link inDryRun} is true: what the change would count (the slots it decides) is not counted.
   */
  async rolledBack<T>(change: (tx: Db) => Promise<T>, options?: { timeout: number; maxWait: number }): Promise<T> {
    try {
      await asDryRun(true, () =>
        this.room.withRoom(() =>
          this.prisma.$transaction(async (tx) => {
            throw new DryRunRollback(await change(tx));
          }, options),
        ),
      );
    } catch (error) {
      if (error instanceof DryRunRollback) return error.result as T;
      throw error;
    }
    throw new Error('unreachable: a dry run always rolls back');
  }

  /**
   * Runs `work` in a savepoint of the dry run's transaction, rolled back as soon as it returns: the
   * rows it locked are free again, so a preview of many tasks holds each one's rows only while it
   * previews that one, and a claim of its due run need not wait for the others.
   */
  async undone<T>(tx: Db, work: () => Promise<T>): Promise<T> {
    await tx.$executeRawUnsafe('SAVEPOINT punctual_preview');
    try {
      return await work();
    } finally {
      await tx.$executeRawUnsafe('ROLLBACK TO SAVEPOINT punctual_preview');
    }
  }

  /** The task's row, planned executions and runs in progress, inside the change's transaction. */
  async snapshot(tx: Db, task: Task): Promise<TaskSnapshot> {
    const [pending, running] = await Promise.all([
      this.executions.unstartedOfTask(task.id, tx),
      tx.$queryRaw<{ id: string; scheduledFor: Date; status: string }[]>`
        SELECT id, scheduled_for AS "scheduledFor", status::text AS status FROM live_execution
        WHERE task_id = ${task.id}::uuid AND status IN ('running', 'retrying') ORDER BY scheduled_for`,
    ]);
    return { task, pending, running };
  }
}

/**
 * What a change did to a task, from before (null: created) and after, over the next `horizon` fire
 * times from `now`: the fire times, the slots added, removed and moved within their local day, the
 * planned executions kept, withdrawn and re-timed, the runs in progress, and warnings in words.
 */
export function compareSnapshots(
  before: TaskSnapshot | null,
  after: TaskSnapshot,
  now: Date,
  horizon: number,
): TaskChanges {
  const fireTimesOf = (s: TaskSnapshot | null): FireTime[] => {
    if (!s) return [];
    const planned = s.pending.filter((p) => p.fireAt.getTime() > now.getTime()).map((p) => p.scheduledFor);
    return upcomingFireTimes(s.task, horizon, now, planned).map((at) => fireTime(at, s.task.timezone));
  };
  const [was, will] = [fireTimesOf(before), fireTimesOf(after)];
  const willAt = new Set(will.map((f) => f.at));
  const wasAt = new Set(was.map((f) => f.at));
  // Compared only within the shorter list's reach: past it, one list simply stopped counting.
  const reach = Math.min(
    was.length === horizon ? Date.parse(was.at(-1)!.at) : Infinity,
    will.length === horizon ? Date.parse(will.at(-1)!.at) : Infinity,
  );
  let removed = was.filter((f) => !willAt.has(f.at) && Date.parse(f.at) <= reach);
  let added = will.filter((f) => !wasAt.has(f.at) && Date.parse(f.at) <= reach);
  const moved: { from: FireTime; to: FireTime }[] = [];
  for (const from of [...removed]) {
    const to = added.find((a) => a.local.slice(0, 10) === from.local.slice(0, 10));
    if (!to) continue;
    moved.push({ from, to });
    removed = removed.filter((r) => r !== from);
    added = added.filter((a) => a !== to);
  }

  const afterById = new Map(after.pending.map((p) => [p.id, p]));
  const slot = (p: UnstartedExecution, newFireAt?: Date): PendingSlot => ({
    executionId: p.id,
    scheduledFor: p.scheduledFor.toISOString(),
    fireAt: p.fireAt.toISOString(),
    due: p.fireAt.getTime() <= now.getTime(),
    ...(newFireAt && { newFireAt: newFireAt.toISOString() }),
  });
  const pending = { kept: [] as PendingSlot[], withdrawn: [] as PendingSlot[], retimed: [] as PendingSlot[] };
  for (const p of before?.pending ?? []) {
    const now = afterById.get(p.id);
    if (!now) pending.withdrawn.push(slot(p));
    else if (now.fireAt.getTime() !== p.fireAt.getTime()) pending.retimed.push(slot(p, now.fireAt));
    else pending.kept.push(slot(p));
  }
  const running = (before ?? after).running.map((r) => ({
    executionId: r.id,
    scheduledFor: r.scheduledFor.toISOString(),
    status: r.status,
  }));
  return {
    fireTimes: { before: was, after: will },
    added,
    removed,
    moved,
    pending,
    running,
    warnings: warningsOf(before, after, now, { pending, running, will }),
  };
}

function fireTime(at: string, zone: string): FireTime {
  return { at, local: formatLocal(new Date(at), zone) };
}

/** What a person would want to know before making the change. */
function warningsOf(
  before: TaskSnapshot | null,
  after: TaskSnapshot,
  now: Date,
  seen: { pending: TaskChanges['pending']; running: TaskChanges['running']; will: FireTime[] },
): string[] {
  const warnings: string[] = [];
  const due = seen.pending.withdrawn.filter((p) => p.due);
  if (due.length)
    warnings.push(
      `withdraws ${due.length} slot(s) already due and not started: ${due
        .slice(0, 5)
        .map((p) => p.scheduledFor)
        .join(', ')}${due.length > 5 ? ', …' : ''}`,
    );
  if (before && seen.running.length && before.task.planVersion !== after.task.planVersion) {
    warnings.push(
      `${seen.running.length} run(s) in progress finish their slot under the definition they started with: ${seen.running
        .slice(0, 5)
        .map((r) => r.executionId)
        .join(', ')}`,
    );
  }
  const task = after.task;
  if (task.scheduleKind === 'at' && task.runAt && task.runAt.getTime() <= now.getTime())
    warnings.push(`schedule.at ${task.runAt.toISOString()} is already past: the task will not run`);
  else if (seen.will.length === 0 && task.status !== 'paused')
    warnings.push('the schedule has no slot to come: the task never fires again and completes');
  if (
    before &&
    (before.task.dstGap !== task.dstGap ||
      before.task.dstOverlap !== task.dstOverlap ||
      before.task.timezone !== task.timezone)
  ) {
    const moves = dstMoves(before.task, task, now);
    if (moves.length)
      warnings.push(
        `the DST policy change moves the slots around the clock changes of the next year: ${moves.slice(0, 6).join('; ')}${moves.length > 6 ? '; …' : ''}`,
      );
  }
  const calendars = Array.isArray(task.calendars) ? (task.calendars as { name: string }[]) : [];
  if (calendars.length && task.status !== 'paused') {
    const month = new Date(now.getTime() + 31 * DAY);
    const withCalendars = safeSlots(task, now, month, 1);
    const without = safeSlots({ ...task, calendars: [] }, now, month, 1);
    if (withCalendars.length === 0 && without.length > 0)
      warnings.push(
        `the calendar(s) ${calendars.map((c) => c.name).join(', ')} exclude every slot of the next 31 days`,
      );
  }
  return warnings;
}

/** The slots of the two definitions that differ on the days the zone's clocks change over the next year, as `before → after`. */
function dstMoves(before: Task, after: Task, now: Date): string[] {
  const zone = after.timezone;
  const moves: string[] = [];
  for (let day = Math.floor(now.getTime() / DAY) * DAY; day < now.getTime() + 366 * DAY; day += DAY) {
    if (offsetAt(day, zone) === offsetAt(day + DAY, zone)) continue;
    const [from, to] = [new Date(day - DAY), new Date(day + 2 * DAY)];
    const was = safeSlots(before, from, to, 200).map((d) => d.getTime());
    const will = safeSlots(after, from, to, 200).map((d) => d.getTime());
    const gone = was.filter((t) => !will.includes(t)).map((t) => formatLocal(new Date(t), before.timezone));
    const come = will.filter((t) => !was.includes(t)).map((t) => formatLocal(new Date(t), zone));
    if (gone.length || come.length) moves.push(`${gone.join(', ') || '(none)'} → ${come.join(', ') || '(none)'}`);
  }
  return moves;
}

function safeSlots(task: Task, from: Date, to: Date, limit: number): Date[] {
  try {
    return slotsBetween(taskSchedule(task), from, to, limit);
  } catch {
    return [];
  }
}
