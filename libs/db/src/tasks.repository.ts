import { Injectable } from '@nestjs/common';
import { Prisma, type Task, type TaskStatus } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** The cursor move the planner made for one task. */
export interface CursorAdvance {
  id: string;
  /** The next slot not yet planned; null once the schedule has no more slots. */
  nextRunAt: Date | null;
  lastScheduledFor: Date | null;
  missed: number;
}

export interface TaskListFilter {
  status?: TaskStatus;
  handler?: string;
  q?: string;
}

export class TaskNameTakenError extends Error {
  override readonly name = 'TaskNameTakenError';
  constructor(readonly taskName: string) {
    super(`a task named "${taskName}" already exists`);
  }
}

/** Owns the `task` table. */
@Injectable()
export class TasksRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(data: Prisma.TaskCreateInput, db: Db = this.prisma): Promise<Task> {
    try {
      return await db.task.create({ data });
    } catch (error) {
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') throw new TaskNameTakenError(data.name);
      throw error;
    }
  }

  findByName(name: string, db: Db = this.prisma): Promise<Task | null> {
    return db.task.findUnique({ where: { name } });
  }

  findById(id: string, db: Db = this.prisma): Promise<Task | null> {
    return db.task.findUnique({ where: { id } });
  }

  findByIds(ids: string[], db: Db = this.prisma): Promise<Task[]> {
    return db.task.findMany({ where: { id: { in: ids } } });
  }

  /** Locks the named task row for the rest of the transaction. */
  async lockByName(db: Db, name: string): Promise<Task | null> {
    const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM task WHERE name = ${name} FOR UPDATE`;
    return rows[0] ? db.task.findUnique({ where: { id: rows[0].id } }) : null;
  }

  /** Tasks ordered by name, keyset-paginated after `afterName`. */
  list(filter: TaskListFilter, limit: number, afterName?: string): Promise<Task[]> {
    return this.prisma.task.findMany({
      where: {
        status: filter.status,
        handler: filter.handler,
        ...(filter.q && {
          OR: [{ name: { contains: filter.q, mode: 'insensitive' } }, { description: { contains: filter.q, mode: 'insensitive' } }],
        }),
        ...(afterName && { name: { gt: afterName } }),
      },
      orderBy: { name: 'asc' },
      take: limit,
    });
  }

  /** Replaces a task's definition, bumping its version. */
  update(db: Db, id: string, data: Prisma.TaskUpdateInput): Promise<Task> {
    return db.task.update({ where: { id }, data: { ...data, version: { increment: 1 }, updatedAt: new Date() } });
  }

  delete(db: Db, id: string): Promise<Task> {
    return db.task.delete({ where: { id } });
  }

  /**
   * Locks up to `limit` active tasks whose cursor is at or before `horizon`, skipping rows another
   * planner holds, oldest cursor first. Uses the partial index on `next_run_at`, so idle and
   * paused tasks cost nothing.
   */
  async lockDue(db: Db, horizon: Date, limit: number): Promise<Task[]> {
    const ids = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM task
      WHERE status = 'active' AND next_run_at <= ${horizon.toISOString()}::timestamptz
      ORDER BY next_run_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`;
    if (ids.length === 0) return [];
    return db.task.findMany({ where: { id: { in: ids.map((r) => r.id) } }, orderBy: { nextRunAt: 'asc' } });
  }

  /** Moves many cursors in one statement; a task whose cursor reaches null is `completed`. */
  async advanceCursors(db: Db, advances: CursorAdvance[]): Promise<void> {
    if (advances.length === 0) return;
    const at = (d: Date | null) => d?.toISOString() ?? null;
    await db.$executeRaw`
      UPDATE task t SET
        next_run_at = u.next_run_at,
        last_scheduled_for = COALESCE(u.last_scheduled_for, t.last_scheduled_for),
        missed_count = t.missed_count + u.missed,
        status = CASE WHEN u.next_run_at IS NULL THEN 'completed'::task_status ELSE t.status END
      FROM unnest(
        ${advances.map((a) => a.id)}::uuid[],
        ${advances.map((a) => at(a.nextRunAt))}::timestamptz[],
        ${advances.map((a) => at(a.lastScheduledFor))}::timestamptz[],
        ${advances.map((a) => a.missed)}::bigint[]
      ) AS u(id, next_run_at, last_scheduled_for, missed)
      WHERE t.id = u.id`;
  }
}
