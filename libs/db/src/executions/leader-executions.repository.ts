import { Injectable } from '@nestjs/common';
import { epochFence, inShard, type LeaderFence } from '../epoch-fence.js';
import { type ExecutionTrigger, type MisfirePolicy, Prisma } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
import { EVENT_CTE, transition } from './execution-transition.js';
import {
  attemptsRemainSql,
  canBeLateSql,
  earlierSlotDueSql,
  HANDLER_OF_ROW,
  lateSql,
  plannedSql,
  runInProgressSql,
} from './predicates.js';
import { HANDED_JSON, handOver } from './turns/turn-statements.js';

/** The handler a row `e` runs, as SQL (see HANDLER_OF_ROW). */
const HANDLER_OF = Prisma.raw(HANDLER_OF_ROW('e'));
import type { HandedTurn } from './turns/turns.repository.js';

/** A planned execution as the leader's timer holds it. */
export interface FireableRow {
  id: string;
  fireAt: Date;
  taskId?: string;
  /** The handler it runs (see HANDLER_OF): its job goes to that handler's queue. */
  handler: string;
  trigger: ExecutionTrigger;
  namespace: string;
  /** Its overlap policy is not `allow`: it waits for its task's earlier slots. */
  exclusive: boolean;
}

/** A late slot the misfire policy runs now, at `fireAt`. */
export type CatchupRow = Pick<FireableRow, 'id' | 'fireAt'>;

/** An execution waiting on a queue job, as the relay pages through them. */
export interface AwaitingJob {
  id: string;
  status: 'scheduled' | 'queued' | 'retrying';
  attempt: number;
  fireAt: Date;
  taskId: string | null;
  /** The handler it runs (see HANDLER_OF); null only for a row whose task is gone. */
  handler: string | null;
}

/** Where the relay's paging stopped: the last row of its previous page. */
export type AwaitingCursor = Pick<AwaitingJob, 'id' | 'fireAt'>;

/**
 * A scheduled slot whose first attempt can no longer start within its task's `maxDelay` (`late`),
 * or a catch-up run of a `run_once`/`run_all` task that has not started either (`catchup`): the
 * misfire policy is applied to them together.
 */
export interface LateRow {
  id: string;
  taskId: string;
  scheduledFor: Date;
  kind: 'late' | 'catchup';
  misfire: MisfirePolicy;
  /** The task's cursor is late too: the planner will record later late slots of the task. */
  cursorLate: boolean;
  taskName: string;
  /** The task's `slo.startWithin` (null: none): a slot recorded missed counts against it. */
  sloStartWithinMs: number | null;
}

/**
 * The leader's side of `task_execution`: firing planned rows, adopting what an earlier leader left,
 * repairing what Redis or a worker lost. Every write — and every read that decides a write — is
 * fenced by the leader's epoch in its own statement: a deposed leader changes nothing.
 */
@Injectable()
export class LeaderExecutionsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Planned rows due up to `before`, after `after` (null: no lower bound; an instant: `fire_at`
   * later than it; a row: the rows after it in `(fire_at, id)` order, so that a page ending inside
   * a crowd of rows due at one instant goes on with the rest of them), oldest first, of the tasks
   * `taskIds` when given: the leader's timer takes them. A row stays `scheduled` until a worker
   * claims it (firing writes nothing), so the leader tells the ones it already pushed apart itself.
   */
  listScheduledDue(
    after: Date | { fireAt: Date; id: string } | null,
    before: Date,
    limit: number,
    fence: LeaderFence,
    taskIds?: string[],
  ): Promise<FireableRow[]> {
    const from =
      after === null
        ? Prisma.empty
        : after instanceof Date
          ? Prisma.sql`AND fire_at > ${after.toISOString()}::timestamptz`
          : Prisma.sql`AND (fire_at, id) > (${after.fireAt.toISOString()}::timestamptz, ${after.id}::uuid)`;
    const of = taskIds ? Prisma.sql`AND task_id = ANY(${taskIds}::uuid[])` : Prisma.empty;
    return this.prisma.$queryRaw<FireableRow[]>`
      WITH ${epochFence(fence)}
      SELECT id, fire_at AS "fireAt", task_id AS "taskId", ${HANDLER_OF} AS handler, trigger, namespace, exclusive FROM live_execution e
      WHERE status = 'scheduled' AND fire_at <= ${before.toISOString()}::timestamptz ${from} ${of} AND parked_at IS NULL ${inShard(Prisma.sql`task_id`, fence)} AND EXISTS (SELECT 1 FROM fence)
      ORDER BY fire_at, id LIMIT ${limit}`;
  }

  /**
   * First attempts of scheduled slots, planned or queued, that are late by Postgres' clock (their
   * `fire_at + maxDelay` has passed): left by an outage of the leader or of every worker. With
   * them, the catch-up runs of the same tasks that have not started yet: when more slots turn late
   * before a catch-up could run, the misfire policy decides again which of them all run (see
   * `resolveLate`) — the worker's late check does not.
   */
  listLateUnstarted(limit: number, fence: LeaderFence): Promise<LateRow[]> {
    return this.prisma.$queryRaw<LateRow[]>`
      WITH ${epochFence(fence)},
      late AS (
        SELECT e.id, e.task_id FROM live_execution e JOIN task t ON t.id = e.task_id
        WHERE ${Prisma.raw(plannedSql('e'))} AND ${Prisma.raw(canBeLateSql('e'))}
          -- A slot held back by flow control was in time when first held: its wait is not lateness.
          AND e.held_at IS NULL
          -- The one late rule (libs/planning isLate): past fire_at + maxDelay by Postgres' clock.
          AND ${Prisma.raw(lateSql('e', 't', 'now()'))} ${inShard(Prisma.sql`e.task_id`, fence)} AND EXISTS (SELECT 1 FROM fence)
        LIMIT ${limit}
      )
      SELECT e.id, e.task_id AS "taskId", e.scheduled_for AS "scheduledFor",
             CASE WHEN e.trigger = 'catchup' THEN 'catchup' ELSE 'late' END AS kind, t.misfire, t.name AS "taskName", t.slo_start_within_ms AS "sloStartWithinMs",
             (t.next_run_at IS NOT NULL AND t.next_run_at < now() - t.max_delay_ms * interval '1 millisecond') AS "cursorLate"
      FROM live_execution e JOIN task t ON t.id = e.task_id
      WHERE e.id IN (SELECT id FROM late)
         OR (e.task_id IN (SELECT task_id FROM late) AND t.misfire IN ('run_once', 'run_all')
             AND e.trigger = 'catchup' AND ${Prisma.raw(plannedSql('e'))} AND e.attempt = 0)
      ORDER BY e.task_id, e.scheduled_for`;
  }

  /**
   * Applies the misfire policy to late rows: `catchup` ones run now (trigger `catchup`, `fire_at`
   * as given; a row that already is a catch-up stays as it is), `missed` ones end `missed` and count
   * in their task's `missed_count`. One transaction, fenced; a row that started meanwhile is left
   * alone.
   */
  async resolveLate(
    fence: LeaderFence,
    catchup: CatchupRow[],
    missed: string[],
  ): Promise<{ caughtUp: CatchupRow[]; missed: number }> {
    return this.prisma.$transaction(async (tx) => {
      const caughtUp = catchup.length
        ? await tx.$queryRaw<CatchupRow[]>`
            WITH ${epochFence(fence)},
            req AS (SELECT * FROM unnest(${catchup.map((c) => c.id)}::uuid[], ${catchup.map((c) => c.fireAt.toISOString())}::timestamptz[]) AS r(id, fire_at)),
            prev AS (SELECT e.id, e.status FROM live_execution e WHERE e.id IN (SELECT id FROM req) AND EXISTS (SELECT 1 FROM fence) ORDER BY e.id FOR UPDATE),
            moved AS (
              UPDATE live_execution e SET trigger = 'catchup', fire_at = req.fire_at
              FROM prev JOIN req USING (id)
              WHERE e.id = prev.id AND ${Prisma.raw(plannedSql('prev'))} AND ${Prisma.raw(canBeLateSql('e'))}
              RETURNING e.id, e.scheduled_for, e.fire_at, e.status, e.attempt, e.worker_id, prev.status AS from_status
            ),
            ${EVENT_CTE(Prisma.sql`'{"reason":"late","misfire":"catchup"}'::jsonb`)}
            SELECT id, fire_at AS "fireAt" FROM moved`
        : [];
      const ended = await transition(tx, {
        ids: missed,
        from: ['scheduled', 'queued'],
        to: 'missed',
        set: Prisma.sql`finished_at = now()`,
        guard: Prisma.sql`e.trigger IN ('schedule', 'catchup') AND e.attempt = 0`,
        epoch: fence,
        detail: { reason: 'late' },
      });
      if (ended.length) {
        await tx.$executeRaw`
          UPDATE task t SET missed_count = t.missed_count + n.count
          FROM (SELECT task_id, count(*) FROM unnest(${ended.map((e) => e.taskId)}::uuid[]) AS u(task_id) GROUP BY task_id) AS n
          WHERE t.id = n.task_id`;
      }
      return { caughtUp, missed: ended.length };
    });
  }

  /**
   * Executions that have waited on a queue job since before `before`: planned or released first
   * attempts (`scheduled` past their `fire_at`, `queued` past their release) and retries whose next
   * attempt is due — not parked ones, which wait for their turn without a job (see
   * {@link handOverStranded}). The relay checks their job still exists. One page in `(fire_at, id)`
   * order after `cursor` (null: from the start), so successive pages reach every one of them however
   * many there are.
   */
  listAwaitingJob(
    before: Date,
    cursor: AwaitingCursor | null,
    limit: number,
    fence: LeaderFence,
  ): Promise<AwaitingJob[]> {
    const at = before.toISOString();
    const after = cursor
      ? Prisma.sql`AND (fire_at, id) > (${cursor.fireAt.toISOString()}::timestamptz, ${cursor.id}::uuid)`
      : Prisma.empty;
    return this.prisma.$queryRaw`
      WITH ${epochFence(fence)}
      SELECT id, status, attempt, fire_at AS "fireAt", task_id AS "taskId", ${HANDLER_OF} AS handler FROM live_execution e
      WHERE ((status = 'scheduled' AND fire_at < ${at}::timestamptz) OR (status = 'queued' AND queued_at < ${at}::timestamptz)
             OR (status = 'retrying' AND next_attempt_at < ${at}::timestamptz))
        AND parked_at IS NULL ${after} ${inShard(Prisma.sql`task_id`, fence)} AND EXISTS (SELECT 1 FROM fence)
      ORDER BY fire_at, id LIMIT ${limit}`;
  }

  /** Of these executions, the ones still as the relay found them (same state, same attempt): waiting on a job. */
  async stillAwaitingJob(
    found: Pick<AwaitingJob, 'id' | 'status' | 'attempt'>[],
    fence: LeaderFence,
  ): Promise<string[]> {
    if (found.length === 0) return [];
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      WITH ${epochFence(fence)}
      SELECT e.id FROM live_execution e
      JOIN unnest(${found.map((f) => f.id)}::uuid[], ${found.map((f) => f.status)}::execution_status[], ${found.map((f) => f.attempt)}::int[])
        AS f(id, status, attempt) ON f.id = e.id
      WHERE e.status = f.status AND e.attempt = f.attempt AND EXISTS (SELECT 1 FROM fence)`;
    return rows.map((r) => r.id);
  }

  /**
   * Slots parked since before `before` whose turn came without a word (the run ahead ended by a
   * path that does not hand over: a cancel, a misfire decision, a reaped lease, a worker gone between
   * its write and the hand-over): each such task's next slot is handed its turn (see `handOver`).
   * Only tasks with nothing left ahead of the parked slot are asked — no exclusive run running or
   * retrying, no earlier slot due — so slots parked on purpose (behind a run still going, or a
   * backlog waiting for its turn) are not read, however many. Paged by task id from `after`: answers
   * the turns handed and where the page stopped (`null` after the last page). Fenced by the epoch;
   * at most `limit` tasks a pass.
   */
  async handOverStranded(
    before: Date,
    after: string | null,
    limit: number,
    fence: LeaderFence,
  ): Promise<{ handed: HandedTurn[]; next: string | null }> {
    const from = after ? Prisma.sql`AND task_id > ${after}::uuid` : Prisma.empty;
    const rows = await this.prisma.$queryRaw<{ handed: HandedTurn[]; last: string | null; asked: number }[]>`
      WITH ${epochFence(fence)},
      asked AS (
        SELECT DISTINCT task_id FROM live_execution p
        WHERE parked_at IS NOT NULL AND parked_at < ${before.toISOString()}::timestamptz AND status IN ('scheduled', 'queued', 'retrying')
          AND (p.status = 'retrying' OR NOT ${Prisma.raw(earlierSlotDueSql('p', 'now()'))})
          AND NOT ${Prisma.raw(runInProgressSql('p', 'running'))} AND NOT ${Prisma.raw(runInProgressSql('p', 'retrying'))}
          ${from} ${inShard(Prisma.sql`task_id`, fence)} AND EXISTS (SELECT 1 FROM fence)
        ORDER BY task_id
        LIMIT ${limit}
      ),
      ended AS (SELECT NULL::uuid AS id WHERE false),
      ${Prisma.raw(handOver('asked', 'ended'))}
      SELECT ${Prisma.raw(HANDED_JSON)} AS handed, (SELECT max(task_id::text) FROM asked) AS last, (SELECT count(*)::int FROM asked) AS asked`;
    const row = rows[0];
    return { handed: row?.handed ?? [], next: row && row.asked >= limit ? row.last : null };
  }

  /**
   * Reaps `running` executions whose lease expired (their worker died or hung): `retrying` at once
   * when attempts remain — by the definition the execution is pinned to, if an edit pinned it, else
   * its task's — else `dead`. Fenced twice: by the epoch, and by the attempt — a worker
   * that renews its lease meanwhile keeps it.
   */
  reapExpiredLeases(
    limit: number,
    fence: LeaderFence,
  ): Promise<{ id: string; status: 'retrying' | 'dead'; attempt: number; handler: string | null }[]> {
    return this.prisma.$queryRaw`
      WITH ${epochFence(fence)},
      expired AS (
        SELECT e.id, e.attempt_id, ${Prisma.raw(attemptsRemainSql('e.attempt', "COALESCE((e.pinned_definition->>'maxAttempts')::int, t.max_attempts, 0)"))} AS retry
        FROM live_execution e LEFT JOIN task t ON t.id = e.task_id
        WHERE e.status = 'running' AND e.lease_until < now() ${inShard(Prisma.sql`e.task_id`, fence)} AND EXISTS (SELECT 1 FROM fence)
        ORDER BY e.lease_until
        LIMIT ${limit}
        FOR UPDATE OF e SKIP LOCKED
      ),
      moved AS (
        UPDATE live_execution e SET
          status = CASE WHEN x.retry THEN 'retrying'::execution_status ELSE 'dead'::execution_status END,
          next_attempt_at = CASE WHEN x.retry THEN now() END,
          finished_at = CASE WHEN x.retry THEN NULL ELSE now() END,
          lease_until = NULL,
          error = 'lease expired: the worker stopped renewing it'
        FROM expired x
        WHERE e.id = x.id AND e.status = 'running' AND e.attempt_id = x.attempt_id
        RETURNING e.id, e.scheduled_for, e.status, e.attempt, e.worker_id, 'running'::execution_status AS from_status, ${HANDLER_OF} AS handler
      ),
      ${EVENT_CTE(Prisma.sql`'{"reason":"lease_expired"}'::jsonb`)}
      SELECT id, status, attempt, handler FROM moved`;
  }
}
