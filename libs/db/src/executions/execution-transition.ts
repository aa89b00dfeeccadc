import { type ExecutionStatus, Prisma, type TaskExecution } from '../generated/prisma/client.js';
import type { Db } from '../prisma.service.js';
import { epochFence } from '../epoch-fence.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';

export const PENDING: ExecutionStatus[] = ['scheduled', 'queued', 'retrying'];

export const statusList = (statuses: ExecutionStatus[]) => Prisma.sql`ARRAY[${Prisma.join(statuses)}]::execution_status[]`;

/**
 * The history row of every transition, appended in the transition's own statement: `moved` must be
 * a CTE returning `id`, `from_status`, `status` and `worker_id`. The one place `execution_event` is
 * written; a transition's `detail` (a jsonb expression) goes between the two parts.
 */
const EVENT_INSERT = [
  `
  ev AS (
    INSERT INTO execution_event (execution_id, from_status, to_status, worker_id, detail)
    SELECT id, from_status, status, worker_id, `,
  ` FROM moved
  )`,
] as const;

/** {@link EVENT_INSERT} in a Prisma statement; `detail` may carry parameters. */
export const EVENT_CTE = (detail: Prisma.Sql = Prisma.sql`NULL::jsonb`) => Prisma.sql`${Prisma.raw(EVENT_INSERT[0])}${detail}${Prisma.raw(EVENT_INSERT[1])}`;

/** {@link EVENT_INSERT} in a statement written by hand for the `pg` pool; `detail` is SQL text. */
export const EVENT_CTE_TEXT = (detail = 'NULL::jsonb') => EVENT_INSERT.join(detail);

/** An execution as a transition left it, and the state it left. */
export type MovedExecution = TaskExecution & { fromStatus: ExecutionStatus };

export interface TransitionSpec {
  ids: string[];
  /** The states the rows may leave; a row in any other state is left alone. */
  from: ExecutionStatus[];
  to: ExecutionStatus;
  /** Further assignments (after `status`). */
  set: Prisma.Sql;
  /** A further condition on the row `e` (an `attempt_id`, say). */
  guard?: Prisma.Sql;
  /** A leader's write: only while this epoch is the newest. */
  epoch?: bigint;
  /** Stored with the event. */
  detail?: Record<string, unknown> | null;
}

/**
 * One fenced state change of many executions in one statement: rows locked in id order (every
 * multi-row transition does, so two of them cannot deadlock), moved only from an expected state
 * and under `guard`, each with its event. Returns the rows as moved.
 */
export async function transition(db: Db, spec: TransitionSpec): Promise<MovedExecution[]> {
  if (spec.ids.length === 0) return [];
  const fence = spec.epoch === undefined ? Prisma.empty : Prisma.sql`${epochFence(spec.epoch)},`;
  const fenced = spec.epoch === undefined ? Prisma.empty : Prisma.sql`AND EXISTS (SELECT 1 FROM fence)`;
  const detail = spec.detail ? JSON.stringify(spec.detail) : null;
  const rows = await db.$queryRaw<(ExecutionRow & { from_status: ExecutionStatus })[]>`
    WITH ${fence}
    prev AS (SELECT id, status FROM task_execution WHERE id = ANY(${spec.ids}::uuid[]) ${fenced} ORDER BY id FOR UPDATE),
    moved AS (
      UPDATE task_execution e SET status = ${spec.to}::execution_status, ${spec.set}
      FROM prev
      WHERE e.id = prev.id AND prev.status = ANY(${statusList(spec.from)}) AND ${spec.guard ?? Prisma.sql`TRUE`}
      RETURNING e.*, prev.status AS from_status
    ),
    ${EVENT_CTE(Prisma.sql`${detail}::jsonb`)}
    SELECT * FROM moved`;
  return rows.map((row) => ({ ...executionFromRow(row), fromStatus: row.from_status }));
}
