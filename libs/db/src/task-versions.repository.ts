import { Injectable } from '@nestjs/common';
import type { Prisma } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** One version of a task as `task_version` keeps it. */
export interface TaskVersionRow {
  taskName: string;
  version: number;
  taskId: string;
  action: string;
  definition: Prisma.JsonValue;
  changedAt: Date;
  changedBy: string;
  reason: string | null;
}

const COLUMNS = `task_name AS "taskName", version, task_id AS "taskId", action, definition, changed_at AS "changedAt", changed_by AS "changedBy", reason`;

/** Owns `task_version`: every version of every task, whole, by name (DESIGN §7 "versions"). Append-only. */
@Injectable()
export class TaskVersionsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** The version each name's next new task starts at: one past the name's last (1 for a new name). */
  async firstVersions(names: string[], db: Db = this.prisma): Promise<Map<string, number>> {
    if (names.length === 0) return new Map();
    const rows = await db.$queryRaw<{ name: string; version: number }[]>`
      SELECT task_name AS name, max(version)::int AS version FROM task_version WHERE task_name = ANY(${names}::text[]) GROUP BY task_name`;
    return new Map(rows.map((r) => [r.name, r.version + 1]));
  }

  /** Stores versions, in the change's transaction (one statement for many). */
  async record(rows: Omit<TaskVersionRow, 'changedAt'>[], changedAt: Date, db: Db): Promise<void> {
    if (rows.length === 0) return;
    const json = rows.map((r) => ({
      task_name: r.taskName,
      version: r.version,
      task_id: r.taskId,
      action: r.action,
      definition: r.definition,
      changed_by: r.changedBy,
      reason: r.reason,
    }));
    await db.$executeRaw`
      INSERT INTO task_version (task_name, version, task_id, action, definition, changed_at, changed_by, reason)
      SELECT task_name, version, task_id, action, definition, ${changedAt}::timestamptz, changed_by, reason
      FROM jsonb_to_recordset(${JSON.stringify(json)}::jsonb)
        AS x(task_name text, version int, task_id uuid, action text, definition jsonb, changed_by text, reason text)
      ON CONFLICT (task_name, version) DO NOTHING`;
  }

  /** A name's versions, newest first, at most `limit`, before `beforeVersion` when given. */
  list(name: string, limit: number, beforeVersion?: number): Promise<TaskVersionRow[]> {
    return this.prisma.$queryRawUnsafe<TaskVersionRow[]>(
      `SELECT ${COLUMNS} FROM task_version WHERE task_name = $1 AND version < $2 ORDER BY version DESC LIMIT $3`,
      name,
      beforeVersion ?? 2_147_483_647,
      limit,
    );
  }

  /** One version of a name, or null. */
  async get(name: string, version: number): Promise<TaskVersionRow | null> {
    const rows = await this.prisma.$queryRawUnsafe<TaskVersionRow[]>(
      `SELECT ${COLUMNS} FROM task_version WHERE task_name = $1 AND version = $2`,
      name,
      version,
    );
    return rows[0] ?? null;
  }
}
