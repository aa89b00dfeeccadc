import { Injectable } from '@nestjs/common';
import { type ExecutionStatus, Prisma } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
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

  /** Executions newest first, keyset-paginated on (scheduled_for, id) so inserts never shift a page. */
  async list(filter: ExecutionFilter, limit: number, after?: { scheduledFor: Date; id: string }) {
    return this.prisma.taskExecution.findMany({
      where: {
        taskName: filter.taskName,
        status: filter.status,
        scheduledFor: { gte: filter.from, lt: filter.to },
        ...(after && {
          OR: [{ scheduledFor: { lt: after.scheduledFor } }, { scheduledFor: after.scheduledFor, id: { lt: after.id } }],
        }),
      },
      orderBy: [{ scheduledFor: 'desc' }, { id: 'desc' }],
      take: limit,
    });
  }

  /** The execution of the task's latest slot, or null. */
  async lastOfTask(taskId: string) {
    return this.prisma.taskExecution.findFirst({ where: { taskId }, orderBy: { scheduledFor: 'desc' } });
  }

  /** How many executions are in each of `statuses` (the `(status, fire_at)` index answers it). */
  async countByStatus<S extends string>(statuses: readonly S[]): Promise<Record<S, number>> {
    const rows = await this.prisma.$queryRaw<{ status: S; n: bigint }[]>`
      SELECT status::text AS status, count(*) AS n FROM task_execution WHERE status::text = ANY(${[...statuses]}::text[]) GROUP BY status`;
    const counts = Object.fromEntries(statuses.map((s) => [s, 0])) as Record<S, number>;
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}
