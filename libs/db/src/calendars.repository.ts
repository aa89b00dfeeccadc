import { Injectable } from '@nestjs/common';
import type { Calendar, Task } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** The fields of a calendar a user writes. */
export interface CalendarFields {
  description: string | null;
  timezone: string | null;
  dates: string[];
  rrules: string[];
  managedBy: string | null;
}

/** A calendar and the names of the tasks that exclude it. */
export type CalendarInUse = Calendar & { tasks: string[] };

/**
 * Calendars of excluded days (DESIGN §6). A task names the calendars it uses in `exclude`: a
 * writer of a task takes a share lock on them ({@link lockForUse}) and a delete an exclusive one, so
 * a delete never misses a task that is being written to use the calendar.
 */
@Injectable()
export class CalendarsRepository {
  constructor(private readonly prisma: PrismaService) {}

  async list(namespace: string): Promise<CalendarInUse[]> {
    return this.prisma.$queryRaw<CalendarInUse[]>`
      SELECT c.name, c.description, c.timezone, c.dates, c.rrules, c.version, c.managed_by AS "managedBy", c.created_at AS "createdAt", c.updated_at AS "updatedAt",
             ARRAY(SELECT t.name FROM task t WHERE c.name = ANY(t.exclude) ORDER BY t.name) AS tasks
      FROM calendar c WHERE c.namespace = ${namespace} ORDER BY c.name`;
  }

  async get(name: string, db: Db = this.prisma): Promise<CalendarInUse | null> {
    const calendar = await db.calendar.findUnique({ where: { name } });
    return calendar && { ...calendar, tasks: await this.users(name, db) };
  }

  /** The named calendars that exist (no lock: for a preview). */
  byNames(names: string[]): Promise<Calendar[]> {
    return names.length ? this.prisma.calendar.findMany({ where: { name: { in: names } } }) : Promise.resolve([]);
  }

  /** Locks the named calendars against a delete for the rest of the transaction; the missing ones are absent. */
  async lockForUse(names: string[], db: Db): Promise<Calendar[]> {
    if (names.length === 0) return [];
    const rows = await db.$queryRaw<
      { name: string }[]
    >`SELECT name FROM calendar WHERE name = ANY(${names}::text[]) ORDER BY name FOR SHARE`;
    return rows.length ? db.calendar.findMany({ where: { name: { in: rows.map((r) => r.name) } } }) : [];
  }

  /** Creates or replaces a calendar (its version moves on a replace), locked for the rest of the transaction; `before` is what it replaced. */
  async put(
    name: string,
    fields: CalendarFields,
    at: Date,
    db: Db,
  ): Promise<{ calendar: Calendar; created: boolean; before: Calendar | null }> {
    const before = await db.calendar.findUnique({ where: { name } });
    const [row] = await db.$queryRaw<{ created: boolean }[]>`
      INSERT INTO calendar (name, description, timezone, dates, rrules, managed_by, created_at, updated_at)
      VALUES (${name}, ${fields.description}, ${fields.timezone}, ${fields.dates}::text[], ${fields.rrules}::text[], ${fields.managedBy}, ${at}, ${at})
      ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, timezone = EXCLUDED.timezone, dates = EXCLUDED.dates,
        rrules = EXCLUDED.rrules, managed_by = EXCLUDED.managed_by, version = calendar.version + 1, updated_at = EXCLUDED.updated_at
      RETURNING (xmax = 0) AS created`;
    return { calendar: (await db.calendar.findUnique({ where: { name } }))!, created: row!.created, before };
  }

  /** Locks the named calendars and every calendar `managedBy` manages in `namespace` (for an apply), in name order. */
  async lockForApply(names: string[], managedBy: string, namespace: string, db: Db): Promise<Calendar[]> {
    const rows = await db.$queryRaw<
      { name: string }[]
    >`SELECT name FROM calendar WHERE name = ANY(${names}::text[]) OR (managed_by = ${managedBy} AND namespace = ${namespace}) ORDER BY name FOR UPDATE`;
    return rows.length
      ? db.calendar.findMany({ where: { name: { in: rows.map((r) => r.name) } }, orderBy: { name: 'asc' } })
      : [];
  }

  /** The tasks that exclude `name`, locked (in name order, as every multi-task lock is taken). */
  async lockUsers(name: string, db: Db): Promise<Task[]> {
    const rows = await db.$queryRaw<
      { id: string }[]
    >`SELECT id FROM task WHERE ${name} = ANY(exclude) ORDER BY name FOR UPDATE`;
    return rows.length
      ? db.task.findMany({ where: { id: { in: rows.map((r) => r.id) } }, orderBy: { name: 'asc' } })
      : [];
  }

  /**
   * Deletes a calendar no task uses: `deleted` false when there is none, `usedBy` the tasks that
   * still exclude it (nothing is deleted then).
   */
  async delete(name: string, db: Db): Promise<{ deleted: boolean; usedBy: string[]; before: Calendar | null }> {
    const [locked] = await db.$queryRaw<{ name: string }[]>`SELECT name FROM calendar WHERE name = ${name} FOR UPDATE`;
    if (!locked) return { deleted: false, usedBy: [], before: null };
    const usedBy = await this.users(name, db);
    const before = await db.calendar.findUnique({ where: { name } });
    if (usedBy.length > 0) return { deleted: false, usedBy, before };
    await db.calendar.delete({ where: { name } });
    return { deleted: true, usedBy, before };
  }

  private async users(name: string, db: Db): Promise<string[]> {
    const rows = await db.$queryRaw<
      { name: string }[]
    >`SELECT name FROM task WHERE ${name} = ANY(exclude) ORDER BY name`;
    return rows.map((r) => r.name);
  }
}
