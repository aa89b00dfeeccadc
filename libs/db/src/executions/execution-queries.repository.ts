import { Injectable } from '@nestjs/common';
import { type ExecutionStatus, Prisma } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';
import { byId } from './by-id.js';
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
  /** The namespace listed: a list never reaches past one. */
  namespace: string;
  taskName?: string;
  status?: ExecutionStatus;
  from?: Date;
  to?: Date;
  /** Only the executions due by this instant (see {@link dueBy}); unset: the planned ones still to come as well. */
  dueBy?: Date;
}

/**
 * Executions due by `now`: their fire time has come, or they have left the planned states (they
 * started, or were skipped, missed or cancelled), or the schedule did not plan them ahead (manual,
 * backfill and catch-up runs are asked for now; their fire times, a millisecond apart, only order
 * them). The others are slots planned ahead — the lookahead's few rows per task — which are not
 * runs yet: not a task's last run, not history.
 */
function dueBy(now: Date): Prisma.Sql {
  return Prisma.sql`(status NOT IN ('scheduled', 'queued') OR fire_at <= ${now.toISOString()}::timestamptz OR trigger <> 'schedule')`;
}

/** Reads of `task_execution` for the API and operators: one execution, pages of them, counts. */
@Injectable()
export class ExecutionQueriesRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** One execution with its history, oldest event first. */
  async findById(id: string) {
    const [row] = await this.prisma.$queryRaw<ExecutionRow[]>`SELECT * FROM task_execution e WHERE ${byId('e', id)}`;
    if (!row) return null;
    const events = await this.prisma.$queryRaw<ExecutionHistoryEvent[]>`
      SELECT h.from_status AS "fromStatus", h.to_status AS "toStatus", h.at, h.worker_id AS "workerId", h.detail
      FROM task_execution e CROSS JOIN LATERAL (${Prisma.raw(EXECUTION_HISTORY)}) h WHERE ${byId('e', id)}`;
    return { ...executionFromRow(row), events };
  }

  /**
   * Executions newest first, keyset-paginated on (scheduled_for, id) so inserts never shift a page
   * (nor rows falling due between two pages: `dueBy` cuts each row by its own fire time).
   * A task's executions are read through `(task_id, scheduled_for)`, with those a deleted task of
   * the same name left behind (`task_execution_orphan_idx`): each an ordered index scan that stops
   * at the page's end.
   */
  /** Whether the execution exists in the namespace (a namespace sees only its own). */
  async inNamespace(id: string, namespace: string): Promise<boolean> {
    const rows = await this.prisma.$queryRaw<unknown[]>`
      SELECT 1 FROM task_execution e WHERE ${byId('e', id)} AND e.namespace = ${namespace}`;
    return rows.length > 0;
  }

  async list(filter: ExecutionFilter, limit: number, after?: { scheduledFor: Date; id: string }) {
    const conditions = [
      Prisma.sql`namespace = ${filter.namespace}`,
      filter.status && Prisma.sql`status = ${filter.status}::execution_status`,
      filter.from && Prisma.sql`scheduled_for >= ${filter.from.toISOString()}::timestamptz`,
      filter.to && Prisma.sql`scheduled_for < ${filter.to.toISOString()}::timestamptz`,
      filter.dueBy && dueBy(filter.dueBy),
      after && Prisma.sql`(scheduled_for, id) < (${after.scheduledFor.toISOString()}::timestamptz, ${after.id}::uuid)`,
    ].filter((c): c is Prisma.Sql => Boolean(c));
    const where = (extra: Prisma.Sql[]) =>
      Prisma.sql`WHERE ${Prisma.join([...extra, ...conditions, Prisma.sql`TRUE`], ' AND ')}`;
    const page = (extra: Prisma.Sql[]) =>
      Prisma.sql`(SELECT * FROM task_execution ${where(extra)} ORDER BY scheduled_for DESC, id DESC LIMIT ${limit})`;
    const rows = filter.taskName
      ? await this.prisma.$queryRaw<ExecutionRow[]>`
          SELECT * FROM (
            ${page([Prisma.sql`task_id = (SELECT id FROM task WHERE name = ${filter.taskName})`])}
            UNION ALL
            ${page([Prisma.sql`task_id IS NULL`, Prisma.sql`task_name = ${filter.taskName}`])}
          ) e ORDER BY scheduled_for DESC, id DESC LIMIT ${limit}`
      : await this.prisma.$queryRaw<
          ExecutionRow[]
        >`SELECT * FROM task_execution ${where([])} ORDER BY scheduled_for DESC, id DESC LIMIT ${limit}`;
    return rows.map(executionFromRow);
  }

  /**
   * The execution of the task's latest slot due by `now` (see {@link dueBy}), or null: the task's
   * slots read back from the newest, past the few planned ahead; once every row of the task is past
   * the retention, the last one as it was when pruned.
   */
  async lastDueOfTask(taskId: string, now: Date) {
    const rows = await this.prisma.$queryRaw<ExecutionRow[]>`
      SELECT * FROM task_execution WHERE task_id = ${taskId}::uuid AND ${dueBy(now)} ORDER BY scheduled_for DESC LIMIT 1`;
    if (rows[0]) return executionFromRow(rows[0]);
    // Every run of the task past the retention: its last one, as pruning kept it (see task_history).
    const kept = await this.prisma.$queryRaw<ExecutionRow[]>`
      SELECT (jsonb_populate_record(NULL::task_execution, k.last_execution)).* FROM task_history k
      WHERE k.task_id = ${taskId}::uuid AND k.last_execution IS NOT NULL`;
    return kept[0] ? executionFromRow(kept[0]) : null;
  }

  /**
   * The slots of the task's executions planned and not yet due by `now`, earliest first, at most
   * `limit`. A slot planned ahead fires less than the task's jitter after it, so only slots after
   * `now - jitterMs` are read: a short range of `(task_id, scheduled_for)` however long the history.
   */
  async plannedSlotsOfTask(taskId: string, now: Date, jitterMs: number, limit: number): Promise<Date[]> {
    const rows = await this.prisma.$queryRaw<{ slot: Date }[]>`
      SELECT scheduled_for AS slot FROM live_execution
      WHERE task_id = ${taskId}::uuid AND scheduled_for > ${new Date(now.getTime() - jitterMs).toISOString()}::timestamptz AND NOT ${dueBy(now)}
      ORDER BY scheduled_for LIMIT ${limit}`;
    return rows.map((r) => r.slot);
  }

  /**
   * Of each task, the first slot of its executions planned and not yet due whose fire time (the
   * slot plus its jitter) may still be after `now` — the first of what `plannedSlotsOfTask` lists —
   * for many tasks in one statement.
   */
  async firstPlannedSlots(taskIds: string[], now: Date): Promise<Map<string, Date>> {
    if (taskIds.length === 0) return new Map();
    const rows = await this.prisma.$queryRaw<{ taskId: string; slot: Date }[]>`
      SELECT DISTINCT ON (task_id) task_id AS "taskId", scheduled_for AS slot FROM live_execution x
      WHERE task_id = ANY(${taskIds}::uuid[]) AND NOT ${dueBy(now)}
        AND scheduled_for > ${now.toISOString()}::timestamptz - (SELECT t.jitter_ms FROM task t WHERE t.id = x.task_id) * interval '1 millisecond'
      ORDER BY task_id, scheduled_for`;
    return new Map(rows.map((r) => [r.taskId, r.slot]));
  }

  /** Whether a deleted task left executions under `name`: its history outlives it. */
  async hasHistoryOfDeleted(name: string): Promise<boolean> {
    const rows = await this.prisma.$queryRaw<{ found: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM task_execution WHERE task_id IS NULL AND task_name = ${name}) AS found`;
    return rows[0]?.found ?? false;
  }

  /**
   * How many executions are in each unfinished state: the waiting ones counted on
   * `task_execution_waiting_idx`, the running ones on `task_execution_running_idx` (a finished
   * run is in neither).
   */
  /**
   * Runs due now and not started, by the handler they run (a pinned run's own): what the cluster
   * view compares with the handlers the live workers offer. Few rows: one per handler.
   */
  async dueByHandler(
    namespaces: readonly string[] | null = null,
  ): Promise<{ handler: string; runs: number; since: Date }[]> {
    const within = namespaces === null ? Prisma.empty : Prisma.sql`AND e.namespace = ANY(${[...namespaces]}::text[])`;
    return this.prisma.$queryRaw<{ handler: string; runs: number; since: Date }[]>`
      SELECT COALESCE(e.pinned_definition->>'handler', t.handler) AS handler, count(*)::int AS runs,
             min(CASE WHEN e.status = 'retrying' THEN e.next_attempt_at ELSE e.fire_at END) AS since
      FROM live_execution e JOIN task t ON t.id = e.task_id
      WHERE e.status IN ('scheduled', 'queued', 'retrying') AND CASE WHEN e.status = 'retrying' THEN e.next_attempt_at ELSE e.fire_at END <= now()
        ${within}
      GROUP BY 1 ORDER BY 1`;
  }

  /**
   * Of `handlers` (the few the live workers offer), those named only by tasks outside `namespaces`:
   * what a key scoped to them is not shown (another namespace's handler names say what it runs). A
   * handler no task names, or one a task of theirs names, is not among them. A look per handler that
   * stops at the first task found, not a walk over every task.
   */
  async handlersOnlyOutside(handlers: readonly string[], namespaces: readonly string[]): Promise<Set<string>> {
    if (handlers.length === 0) return new Set();
    const rows = await this.prisma.$queryRaw<{ handler: string }[]>`
      SELECT h.handler FROM unnest(${[...handlers]}::text[]) AS h(handler)
      WHERE NOT EXISTS (SELECT 1 FROM task t WHERE t.namespace = ANY(${[...namespaces]}::text[]) AND t.handler = h.handler)
        AND EXISTS (SELECT 1 FROM task t WHERE t.handler = h.handler AND t.namespace <> ALL(${[...namespaces]}::text[]))`;
    return new Set(rows.map((r) => r.handler));
  }

  /** Every handler a task names or an unfinished run is pinned to: the queues that may hold jobs. */
  async handlersInUse(): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<{ handler: string }[]>`
      SELECT DISTINCT handler FROM task
      UNION
      SELECT DISTINCT pinned_definition->>'handler' FROM live_execution
      WHERE pinned_definition IS NOT NULL AND status IN ('scheduled', 'queued', 'running', 'retrying') AND pinned_definition->>'handler' IS NOT NULL`;
    return rows.map((r) => r.handler);
  }

  async countUnfinished(): Promise<Record<'scheduled' | 'queued' | 'running' | 'retrying', number>> {
    const rows = await this.prisma.$queryRaw<{ status: 'scheduled' | 'queued' | 'running' | 'retrying'; n: bigint }[]>`
      SELECT status, count(*) AS n FROM live_execution WHERE status IN ('scheduled', 'queued', 'retrying') GROUP BY status
      UNION ALL
      SELECT 'running', count(*) FROM live_execution WHERE status = 'running'`;
    const counts = { scheduled: 0, queued: 0, running: 0, retrying: 0 };
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}
