import { Injectable } from '@nestjs/common';
import { type ExecutionStatus, Prisma } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import { EXECUTION_HISTORY } from './execution-transition.js';

/** One transition in an execution's history. */
export interface ExecutionHistoryEvent {
  fromStatus: ExecutionStatus | null;
  toStatus: ExecutionStatus;
  at: Date;
  workerId: string | null;
  detail: Prisma.JsonValue | null;
}

export interface ExecutionFilter {
  taskName?: string;
  status?: ExecutionStatus;
  from?: Date;
  to?: Date;
}

/** Reads of `task_execution` for the API and operators: one execution, pages of them, counts. */
@Injectable()
export class ExecutionQueriesRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** One execution with its history, oldest event first. */
  async findById(id: string) {
    const execution = await this.prisma.taskExecution.findUnique({ where: { id } });
    if (!execution) return null;
    const events = await this.prisma.$queryRaw<ExecutionHistoryEvent[]>`
      SELECT h.from_status AS "fromStatus", h.to_status AS "toStatus", h.at, h.worker_id AS "workerId", h.detail
      FROM task_execution e CROSS JOIN LATERAL (${Prisma.raw(EXECUTION_HISTORY)}) h WHERE e.id = ${id}::uuid`;
    return { ...execution, events };
  }

  /**
   * Executions newest first, keyset-paginated on (scheduled_for, id) so inserts never shift a page.
   * A task's executions are read through `(task_id, scheduled_for)`, with those a deleted task of
   * the same name left behind (`task_execution_orphan_idx`): each an ordered index scan that stops
   * at the page's end.
   */
  async list(filter: ExecutionFilter, limit: number, after?: { scheduledFor: Date; id: string }) {
    const conditions = [
      filter.status && Prisma.sql`status = ${filter.status}::execution_status`,
      filter.from && Prisma.sql`scheduled_for >= ${filter.from.toISOString()}::timestamptz`,
      filter.to && Prisma.sql`scheduled_for < ${filter.to.toISOString()}::timestamptz`,
      after && Prisma.sql`(scheduled_for, id) < (${after.scheduledFor.toISOString()}::timestamptz, ${after.id}::uuid)`,
    ].filter((c): c is Prisma.Sql => Boolean(c));
    const where = (extra: Prisma.Sql[]) => Prisma.sql`WHERE ${Prisma.join([...extra, ...conditions, Prisma.sql`TRUE`], ' AND ')}`;
    const page = (extra: Prisma.Sql[]) => Prisma.sql`(SELECT * FROM task_execution ${where(extra)} ORDER BY scheduled_for DESC, id DESC LIMIT ${limit})`;
    const rows = filter.taskName
      ? await this.prisma.$queryRaw<ExecutionRow[]>`
          SELECT * FROM (
            ${page([Prisma.sql`task_id = (SELECT id FROM task WHERE name = ${filter.taskName})`])}
            UNION ALL
            ${page([Prisma.sql`task_id IS NULL`, Prisma.sql`task_name = ${filter.taskName}`])}
          ) e ORDER BY scheduled_for DESC, id DESC LIMIT ${limit}`
      : await this.prisma.$queryRaw<ExecutionRow[]>`SELECT * FROM task_execution ${where([])} ORDER BY scheduled_for DESC, id DESC LIMIT ${limit}`;
    return rows.map(executionFromRow);
  }

  /** The execution of the task's latest slot, or null. */
  async lastOfTask(taskId: string) {
    return this.prisma.taskExecution.findFirst({ where: { taskId }, orderBy: { scheduledFor: 'desc' } });
  }

  /**
   * How many executions are in each unfinished state: the waiting ones counted on
   * `task_execution_waiting_idx`, the running ones on `task_execution_running_idx` (a finished
   * run is in neither).
   */
  async countUnfinished(): Promise<Record<'scheduled' | 'queued' | 'running' | 'retrying', number>> {
    const rows = await this.prisma.$queryRaw<{ status: 'scheduled' | 'queued' | 'running' | 'retrying'; n: bigint }[]>`
      SELECT status, count(*) AS n FROM task_execution WHERE status IN ('scheduled', 'queued', 'retrying') GROUP BY status
      UNION ALL
      SELECT 'running', count(*) FROM task_execution WHERE status = 'running'`;
    const counts = { scheduled: 0, queued: 0, running: 0, retrying: 0 };
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}
