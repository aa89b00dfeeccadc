import { Injectable } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import { ClockService } from '@punctual/clock';
import {
  CALENDAR_NAME_PATTERN,
  type Calendar as CalendarJson,
  type TaskChanges as Changes,
  type CalendarDays as CalendarDaysJson,
  type CalendarPutBody,
  TASK_DEFAULTS,
  bareName,
} from '@punctual/contract';
import {
  AuditRepository,
  type Calendar,
  type CalendarFields,
  type CalendarInUse,
  CalendarsRepository,
  type Db,
  HistoryRoom,
  PrismaService,
  type Task,
} from '@punctual/db';
import { checkExcludedDays, excludedDatesOfYear, InvalidScheduleError } from '@punctual/time';
import { CalendarInUseError, InvalidTaskError, ManagedElsewhereError, NotFoundError } from './errors.js';
import { TaskChanges } from './task-changes.js';
import { toTaskDefinition } from './task-definition.js';
import { type LifecycleResult, TaskLifecycle } from './task-lifecycle.js';
import { ChangePreviews, compareSnapshots } from './change-preview.js';
import { mergeTaskPatch } from './task-patch.js';
import { presentDefinition } from './task.presenter.js';

/**
 * Calendars of excluded days (DESIGN §6). Replacing one re-plans every task that excludes it, in
 * the same transaction and exactly as an edit of the task's schedule would (DESIGN §4 "Edits never
 * lose a slot"): planned slots on newly excluded days are withdrawn, slots on days no longer
 * excluded are planned, every other planned slot keeps its row.
 */
@Injectable()
export class CalendarsService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly calendars: CalendarsRepository,
    private readonly lifecycle: TaskLifecycle,
    private readonly changes: TaskChanges,
    private readonly audit: AuditRepository,
    private readonly clock: ClockService,
    private readonly previews: ChangePreviews,
    private readonly room: HistoryRoom,
  ) {}

  list(namespace: string): Promise<CalendarInUse[]> {
    return this.calendars.list(namespace);
  }

  async get(name: string): Promise<CalendarInUse> {
    return (await this.calendars.get(name)) ?? Promise.reject(new NotFoundError('calendar', name));
  }

  /** Every local date of `year` (default: this year, UTC) the calendar excludes. */
  async days(name: string, asked?: number): Promise<CalendarDaysJson> {
    const calendar = await this.get(name);
    const year = asked ?? this.clock.date().getUTCFullYear();
    return {
      name: bareName(name),
      year,
      timezone: calendar.timezone,
      days: excludedDatesOfYear(
        { timezone: calendar.timezone ?? TASK_DEFAULTS.timezone, dates: calendar.dates, rrules: calendar.rrules },
        year,
      ),
    };
  }

  /** The named calendars that exist, as a preview of a schedule excluding them reads them (no lock). */
  byNames(names: string[]): Promise<Calendar[]> {
    return this.calendars.byNames(names);
  }

  /** Creates or replaces a calendar and re-plans the tasks that exclude it. */
  async put(
    name: string,
    body: CalendarPutBody,
    actor: Principal,
    dryRun?: { horizon: number },
  ): Promise<{ calendar: CalendarInUse; created: boolean; changes?: Record<string, Changes> }> {
    if (!CALENDAR_NAME_PATTERN.test(bareName(name)))
      throw new InvalidTaskError('name', `name must match ${CALENDAR_NAME_PATTERN.source}`, 'invalid_name');
    const fields = calendarFields(body);
    const now = this.clock.date();
    const change = async (tx: Db) => {
      // A calendar an apply manages is changed by that apply, not taken from it by a plain PUT.
      const owner = (await tx.calendar.findUnique({ where: { name }, select: { managedBy: true } }))?.managedBy ?? null;
      if (owner !== null && fields.managedBy !== owner) throw new ManagedElsewhereError('calendar', name, owner);
      const written = await this.write(tx, actor, name, fields, now, dryRun);
      return { ...written, calendar: dryRun ? await this.calendars.get(name, tx) : null };
    };
    // Re-planning every task of a busy calendar takes longer than Prisma's default of 5 s.
    const options = { timeout: 60_000, maxWait: 10_000 };
    if (dryRun) {
      const previewed = await this.previews.rolledBack(change, options);
      return { calendar: previewed.calendar!, created: previewed.created, changes: previewed.changes };
    }
    const { created, cancelled } = await this.room.withRoom(() => this.prisma.$transaction(change, options));
    await this.changes.announce(cancelled, 'all');
    return { calendar: await this.get(name), created };
  }

  /** Deletes a calendar; 409 (`CalendarInUseError`) while a task excludes it. */
  async delete(name: string, actor: Principal): Promise<void> {
    await this.prisma.$transaction((tx) => this.remove(tx, actor, name));
  }

  /**
   * Inside the caller's transaction: writes a calendar (checked, see {@link calendarFields}) and
   * re-plans the tasks that exclude it; returns the running executions a re-plan cancelled.
   */
  async write(
    tx: Db,
    actor: Principal,
    name: string,
    fields: CalendarFields,
    now: Date,
    dryRun?: { horizon: number },
  ): Promise<{ calendar: Calendar; created: boolean; cancelled: string[]; changes?: Record<string, Changes> }> {
    const { calendar, created, before } = await this.calendars.put(name, fields, now, tx);
    // A preview locks no user for all of them: each is locked while it is previewed (see previewUser).
    const users = dryRun
      ? await tx.task.findMany({ where: { exclude: { has: name } }, orderBy: { name: 'asc' } })
      : await this.calendars.lockUsers(name, tx);
    // Every calendar the users exclude, read (and locked) once for all of them.
    const excluded = await this.calendars.lockForUse([...new Set(users.flatMap((task) => task.exclude))], tx);
    const cancelled: string[] = [];
    const changes: Record<string, Changes> = {};
    for (const task of users) {
      if (dryRun) {
        changes[task.name] = await this.previewUser(tx, task, now, excluded, dryRun.horizon);
        continue;
      }
      const changed = await this.replan(tx, task, now, excluded);
      await this.changes.recordVersion(tx, actor, 'calendar.put', changed.task);
      cancelled.push(...changed.cancelledRunning);
    }
    await this.audit.record(
      {
        actor: actor.actor,
        action: 'calendar.put',
        target: name,
        before: before && snapshot(before),
        after: snapshot(calendar),
      },
      tx,
    );
    return { calendar, created, cancelled, ...(dryRun && { changes }) };
  }

  /** Inside the caller's transaction: deletes a calendar no task excludes (else `CalendarInUseError`). */
  async remove(tx: Db, actor: Principal, name: string): Promise<void> {
    const result = await this.calendars.delete(name, tx);
    if (!result.before) throw new NotFoundError('calendar', name);
    if (!result.deleted) throw new CalendarInUseError(name, result.usedBy);
    await this.audit.record(
      { actor: actor.actor, action: 'calendar.delete', target: name, before: snapshot(result.before), after: null },
      tx,
    );
  }

  /**
   * A preview's re-plan of one task that excludes the calendar, in a savepoint rolled back at once:
   * the task's row and unfinished runs are locked only while it is previewed.
   */
  private async previewUser(tx: Db, task: Task, now: Date, calendars: Calendar[], horizon: number): Promise<Changes> {
    return this.previews.undone(tx, async () => {
      await tx.$queryRaw`SELECT id FROM task WHERE id = ${task.id}::uuid FOR UPDATE`;
      const locked = (await tx.task.findUnique({ where: { id: task.id } })) ?? task;
      const was = await this.previews.snapshot(tx, locked);
      const changed = await this.replan(tx, locked, now, calendars);
      return compareSnapshots(was, await this.previews.snapshot(tx, changed.task), now, horizon);
    });
  }

  /** The task's definition with the calendars' new content, applied as an edit of its schedule. */
  private async replan(tx: Db, task: Task, now: Date, calendars: Calendar[]): Promise<LifecycleResult> {
    const spec = mergeTaskPatch({ ...presentDefinition(task), payload: task.payload }, {}, task.name);
    const definition = toTaskDefinition(spec, now, task.startAt ?? task.createdAt, task, calendars);
    return this.lifecycle.edit(tx, task, definition, now);
  }
}

/** The API's view of a calendar. */
export function presentCalendar(calendar: CalendarInUse): CalendarJson {
  return {
    name: bareName(calendar.name),
    description: calendar.description,
    timezone: calendar.timezone,
    dates: calendar.dates,
    rrules: calendar.rrules,
    version: calendar.version,
    managedBy: calendar.managedBy,
    tasks: calendar.tasks.map(bareName),
    createdAt: calendar.createdAt.toISOString(),
    updatedAt: calendar.updatedAt.toISOString(),
  };
}

/**
 * A calendar's fields as stored: dates sorted and each once, absent fields null or empty. Refuses
 * a zone, date or rule that cannot be read, naming the field with `prefix` (422).
 */
export function calendarFields(body: CalendarPutBody, prefix = ''): CalendarFields {
  const fields = {
    description: body.description ?? null,
    timezone: body.timezone ?? null,
    dates: [...new Set(body.dates)].sort(),
    rrules: body.rrules ?? [],
    managedBy: body.managedBy ?? null,
  };
  try {
    checkExcludedDays({
      timezone: fields.timezone ?? TASK_DEFAULTS.timezone,
      dates: body.dates,
      rrules: fields.rrules,
    });
  } catch (error) {
    if (error instanceof InvalidScheduleError)
      throw new InvalidTaskError(`${prefix}${error.field}`, `${prefix}${error.message}`, 'invalid_calendar');
    throw error;
  }
  return fields;
}

function snapshot(calendar: Calendar) {
  return {
    name: calendar.name,
    description: calendar.description,
    timezone: calendar.timezone,
    dates: calendar.dates,
    rrules: calendar.rrules,
    version: calendar.version,
    managedBy: calendar.managedBy,
  };
}
