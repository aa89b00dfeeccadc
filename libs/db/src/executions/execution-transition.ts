import { type ExecutionStatus, Prisma, type TaskExecution } from '../generated/prisma/client.js';
import type { Db } from '../prisma.service.js';
import { QUOTA_KEY_PREFIX } from '@punctual/planning';
import { epochFence, type LeaderFence } from '../epoch-fence.js';
import { byIds } from './by-id.js';
import { type ExecutionRow, executionFromRow } from './execution.row.js';

export const PENDING: ExecutionStatus[] = ['scheduled', 'queued', 'retrying'];

export const statusList = (statuses: ExecutionStatus[]) =>
  Prisma.sql`ARRAY[${Prisma.join(statuses)}]::execution_status[]`;

/**
 * The history row of a transition, appended in the transition's own statement: `moved` must be a
 * CTE returning `id`, `scheduled_for` (the event lives in its execution's partition), `from_status`,
 * `status`, `attempt` and `worker_id`. The one place
 * `execution_event` is written; a transition's `detail` (a jsonb expression) goes between the two
 * parts.
 *
 * The happy path writes no history rows: marking a planned row `queued`, the first attempt's claim
 * and a success are read back from the row's own `queued_at`, `started_at`, `finished_at` and
 * `worker_id` (see {@link EXECUTION_HISTORY}). Every other transition is a row here.
 */
const EVENT_INSERT = [
  `
  ev AS (
    INSERT INTO execution_event (execution_id, scheduled_for, from_status, to_status, worker_id, detail)
    SELECT id, scheduled_for, from_status, status, worker_id, `,
  ` FROM moved
    WHERE NOT ((from_status = 'scheduled' AND status = 'queued')
            OR (from_status IN ('scheduled', 'queued') AND status = 'running' AND attempt = 1)
            OR (from_status = 'running' AND status = 'succeeded'))
  )`,
] as const;

/**
 * The history of the executions `e` of a query (a lateral subquery over `e`): the rows of
 * `execution_event` with the transitions the happy path did not write, derived from the row —
 * `scheduled → queued` at `queued_at`, the first attempt's claim at `started_at` (while the row is
 * still on its first attempt: the next claim writes it down before moving on), and the success at
 * `finished_at`. A transition also written as a row (by an older version) is not derived twice.
 * An event is in its execution's partition (or, written by the version before partitioning, at
 * `-infinity`).
 * Columns: `from_status`, `to_status`, `at`, `worker_id`, `detail`, oldest first.
 */
export const EXECUTION_HISTORY = `
  SELECT h.from_status, h.to_status, h.at, h.worker_id, h.detail FROM (
    SELECT ev.from_status, ev.to_status, ev.at, ev.worker_id, ev.detail, ev.id AS seq
    FROM execution_event ev WHERE ev.execution_id = e.id AND ev.scheduled_for IN (e.scheduled_for, '-infinity')
    UNION ALL
    SELECT 'scheduled', 'queued', e.queued_at, NULL, NULL, -2
    WHERE e.queued_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM execution_event ev WHERE ev.execution_id = e.id AND ev.to_status = 'queued')
    UNION ALL
    SELECT CASE WHEN e.queued_at IS NOT NULL THEN 'queued' ELSE 'scheduled' END::execution_status, 'running', e.started_at, e.worker_id,
           jsonb_build_object('attempt', 1), -1
    WHERE e.attempt = 1 AND e.started_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM execution_event ev WHERE ev.execution_id = e.id AND ev.to_status = 'running' AND ev.detail->>'attempt' = '1')
    UNION ALL
    SELECT 'running', 'succeeded', e.finished_at, e.worker_id, NULL, 9223372036854775807
    WHERE e.status = 'succeeded'
      AND NOT EXISTS (SELECT 1 FROM execution_event ev WHERE ev.execution_id = e.id AND ev.to_status = 'succeeded')
  ) h ORDER BY h.at, h.seq`;

/** {@link EVENT_INSERT} in a Prisma statement; `detail` may carry parameters. */
export const EVENT_CTE = (detail: Prisma.Sql = Prisma.sql`NULL::jsonb`) =>
  Prisma.sql`${Prisma.raw(EVENT_INSERT[0])}${detail}${Prisma.raw(EVENT_INSERT[1])}`;

/** {@link EVENT_INSERT} in a statement written by hand for the `pg` pool; `detail` is SQL text. */
export const EVENT_CTE_TEXT = (detail = 'NULL::jsonb') => EVENT_INSERT.join(detail);

/**
 * {@link TransitionSpec.keepPermit}: the permits of the running rows moved — their concurrency
 * key's, and their namespace's `maxConcurrentRuns'` when they started under it (`quotaFlowKey`) —
 * kept until their leases' end.
 */
const KEEP_PERMIT = Prisma.sql`
    permits AS (
      INSERT INTO overrun_permit (attempt_id, key, execution_id, until)
      SELECT p.attempt_id, k.key, p.id, p.lease_until FROM prev p JOIN moved m ON m.id = p.id
      CROSS JOIN LATERAL (VALUES (p.concurrency_key), (${QUOTA_KEY_PREFIX}::text || p.quota_namespace)) AS k(key)
      WHERE p.status = 'running' AND k.key IS NOT NULL AND p.attempt_id IS NOT NULL AND p.lease_until > clock_timestamp()
      ON CONFLICT (attempt_id, key) DO NOTHING
    ),`;

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
  /** A leader's write: only while this epoch is the newest of its shard. */
  epoch?: LeaderFence;
  /** Stored with the event. */
  detail?: Record<string, unknown> | null;
  /** Rows another transaction holds are left alone instead of waited for (a worker's claim must not wait). */
  skipLocked?: boolean;
  /**
   * A running row ended by someone other than its worker (a cancel, a replace): its concurrency
   * key's permit stays held, as an `overrun_permit` until its lease's end, while its handler may
   * still be running; the worker drops it when the handler settles (see AttemptsRepository.keepPermits).
   */
  keepPermit?: boolean;
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
    prev AS (
      SELECT id, status, attempt_id, concurrency_key, quota_namespace, lease_until FROM task_execution p
      WHERE ${byIds('p', spec.ids)} ${fenced} ORDER BY id FOR UPDATE ${spec.skipLocked ? Prisma.sql`SKIP LOCKED` : Prisma.empty}
    ),
    moved AS (
      UPDATE task_execution e SET status = ${spec.to}::execution_status, ${spec.set}
      FROM prev
      WHERE ${byIds('e', spec.ids)} AND e.id = prev.id AND prev.status = ANY(${statusList(spec.from)}) AND ${spec.guard ?? Prisma.sql`TRUE`}
      RETURNING e.*, prev.status AS from_status
    ),
    ${spec.keepPermit ? KEEP_PERMIT : Prisma.empty}
    ${EVENT_CTE(Prisma.sql`${detail}::jsonb`)}
    SELECT * FROM moved`;
  return rows.map((row) => ({ ...executionFromRow(row), fromStatus: row.from_status }));
}
