import { Injectable } from '@nestjs/common';
import { PrismaService } from './prisma.service.js';

/** Read-only counts over `task_execution` for operators (`GET /v1/cluster`). */
@Injectable()
export class ExecutionStatsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** How many executions are in each of `statuses` (the `(status, fire_at)` index answers it). */
  async countByStatus<S extends string>(statuses: readonly S[]): Promise<Record<S, number>> {
    const rows = await this.prisma.$queryRaw<{ status: S; n: bigint }[]>`
      SELECT status::text AS status, count(*) AS n FROM task_execution WHERE status::text = ANY(${[...statuses]}::text[]) GROUP BY status`;
    const counts = Object.fromEntries(statuses.map((s) => [s, 0])) as Record<S, number>;
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}
