import { Injectable } from '@nestjs/common';
import { Prisma, type Task } from '../generated/prisma/client.js';
import { plannedSql } from '../executions/predicates.js';
import { PrismaService } from '../prisma.service.js';

/** A task's health as Postgres computes it from its executions (DESIGN §8). */
export interface TaskHealthRow {
  id: string;
  state: 'ok' | 'late' | 'failing' | 'never_ran' | 'paused' | 'completed';
  lastSuccessAt: Date | null;
  lastSlotAt: Date | null;
  consecutiveFailures: number;
}

/**
 * What a task's health is read from, beside its row `t`, each an index lookup of its own
 * (`task_execution_task_id_scheduled_for_desc_idx` walked back from the newest slot, the pending
 * index for the oldest unstarted slot):
 * - a slot *fails* when it ends `dead`, `missed` or `skipped` as late; it *succeeds* when it ends
 *   `succeeded`; other ends (an overlap skip, a cancel) are neither;
 * - `late`: a slot has waited to start longer than `slo.startWithin` (else `maxDelay`) past its
 *   fire time, or the task's cursor is that far behind (no scheduler planned it);
 * - what the retention removed is read from `task_history`, which keeps a task's latest success,
 *   the failures after it, its latest finished slot and latest slot of the rows pruned.
 */
const HEALTH_JOIN = Prisma.sql`
  LEFT JOIN LATERAL (
    SELECT COALESCE(s.scheduled_for, k.last_success_slot) AS success_slot, COALESCE(s.finished_at, k.last_success_at) AS last_success_at,
      GREATEST((SELECT max(x.scheduled_for) FROM task_execution x WHERE x.task_id = t.id AND x.scheduled_for <= now()), k.last_slot) AS last_slot_at,
      COALESCE((SELECT f.status = 'succeeded' FROM task_execution f
        WHERE f.task_id = t.id AND (f.status IN ('succeeded', 'dead', 'missed') OR (f.status = 'skipped' AND f.skip_reason = 'late'))
        ORDER BY f.scheduled_for DESC LIMIT 1), k.last_finished_ok) AS last_finished_ok,
      (SELECT count(*)::int FROM task_execution d
        WHERE d.task_id = t.id AND d.scheduled_for > COALESCE(s.scheduled_for, k.last_success_slot, '-infinity')
          AND (d.status IN ('dead', 'missed') OR (d.status = 'skipped' AND d.skip_reason = 'late')))
        + CASE WHEN s.scheduled_for IS NULL THEN COALESCE(k.failures_since_success, 0) ELSE 0 END AS failures,
      (SELECT min(p.fire_at) FROM live_execution p WHERE p.task_id = t.id AND ${Prisma.raw(plannedSql('p'))}) AS oldest_pending
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
      SELECT e.scheduled_for, e.finished_at FROM task_execution e WHERE e.task_id = t.id AND e.status = 'succeeded' ORDER BY e.scheduled_for DESC LIMIT 1
    ) s ON true
    -- What pruning kept of the rows it removed (see task_history): health survives the history's retention.
    LEFT JOIN task_history k ON k.task_id = t.id
  ) h ON true`;

const WITHIN = Prisma.sql`(COALESCE(t.slo_start_within_ms, t.max_delay_ms) * interval '1 millisecond')`;

/** The state, worst first: a paused task is only paused; then late, failing, completed, never ran, ok. */
const HEALTH_STATE = Prisma.sql`
  CASE
    WHEN t.status = 'paused' THEN 'paused'
    WHEN h.oldest_pending < now() - ${WITHIN} OR (t.status = 'active' AND t.next_run_at < now() - ${WITHIN}) THEN 'late'
    WHEN h.last_finished_ok = false THEN 'failing'
    WHEN t.status = 'completed' THEN 'completed'
    WHEN h.last_finished_ok IS NULL THEN 'never_ran'
    ELSE 'ok'
  END`;

@Injectable()
export class TaskHealthRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** The health of each task of `ids`, by id. */
  async of(ids: string[]): Promise<Map<string, TaskHealthRow>> {
    if (ids.length === 0) return new Map();
    const rows = await this.prisma.$queryRaw<TaskHealthRow[]>`
      SELECT t.id, ${HEALTH_STATE} AS state, h.last_success_at AS "lastSuccessAt", h.last_slot_at AS "lastSlotAt", h.failures AS "consecutiveFailures"
      FROM task t ${HEALTH_JOIN}
      WHERE t.id = ANY(${ids}::uuid[])`;
    return new Map(rows.map((r) => [r.id, r]));
  }

  /**
   * The active tasks with an `slo` (at most `limit`, by name) and each one's latest success: its
   * slot and when it finished (null: none yet). What the per-task metric series are set from.
   */
  async sloTasks(limit: number): Promise<{ task: Task; lastSuccessSlot: Date | null; lastSuccessAt: Date | null }[]> {
    const tasks = await this.prisma.task.findMany({
      where: { status: 'active', sloStartWithinMs: { not: null } },
      orderBy: { name: 'asc' },
      take: limit,
    });
    if (tasks.length === 0) return [];
    const rows = await this.prisma.$queryRaw<{ id: string; slot: Date; finished: Date | null }[]>`
      SELECT t.id, COALESCE(s.scheduled_for, k.last_success_slot) AS slot, COALESCE(s.finished_at, k.last_success_at) AS finished FROM task t
      LEFT JOIN LATERAL (SELECT e.scheduled_for, e.finished_at FROM task_execution e WHERE e.task_id = t.id AND e.status = 'succeeded' ORDER BY e.scheduled_for DESC LIMIT 1) s ON true
      LEFT JOIN task_history k ON k.task_id = t.id
      WHERE t.id = ANY(${tasks.map((t) => t.id)}::uuid[]) AND (s.scheduled_for IS NOT NULL OR k.last_success_slot IS NOT NULL)`;
    const success = new Map(rows.map((r) => [r.id, r]));
    return tasks.map((task) => ({
      task,
      lastSuccessSlot: success.get(task.id)?.slot ?? null,
      lastSuccessAt: success.get(task.id)?.finished ?? null,
    }));
  }

  /** A condition on task `t` that holds when its health is `state` (for a filtered list). */
  static inState(state: TaskHealthRow['state']): { join: Prisma.Sql; where: Prisma.Sql } {
    return { join: HEALTH_JOIN, where: Prisma.sql`(${HEALTH_STATE}) = ${state}` };
  }

  /**
   * The failure breaker (`policy.pauseAfter`): pauses the task when at least `failures` of its
   * slots ended dead within the last `withinMs`, with `note` saying why — in one transaction with
   * its audit entry and its version (the task's last definition, paused). Null when the task is not
   * active or has not failed that often. A slot counts once, whatever its attempts; cancels and
   * skips are not failures.
   */
  async tripBreaker(
    taskId: string,
    failures: number,
    withinMs: number,
    note: string,
  ): Promise<{ id: string; name: string; version: number } | null> {
    return this.prisma.$transaction(async (tx) => {
      const [paused] = await tx.$queryRaw<{ id: string; name: string; version: number; updated_at: Date }[]>`
        UPDATE task t SET status = 'paused', pause_note = ${note}, version = t.version + 1, updated_at = now()
        WHERE t.id = ${taskId}::uuid AND t.status = 'active'
          AND (SELECT count(*) FROM task_execution e
               WHERE e.task_id = t.id AND e.status = 'dead' AND e.finished_at > now() - ${withinMs}::int * interval '1 millisecond') >= ${failures}::int
        RETURNING t.id, t.name, t.version, t.updated_at`;
      if (!paused) return null;
      const state = {
        paused: true,
        status: 'paused',
        pauseNote: note,
        version: paused.version,
        updatedAt: paused.updated_at.toISOString(),
      };
      await tx.$executeRaw`
        INSERT INTO audit_log (actor, action, target, before, after)
        SELECT 'breaker', 'task.pause', ${paused.name}, a.after, a.after || ${JSON.stringify(state)}::jsonb
        FROM audit_log a WHERE a.target = ${paused.name} AND a.after IS NOT NULL AND a.action LIKE 'task.%' ORDER BY a.id DESC LIMIT 1`;
      await tx.$executeRaw`
        INSERT INTO task_version (task_name, version, task_id, action, definition, changed_at, changed_by, reason)
        SELECT v.task_name, ${paused.version}::int, v.task_id, 'task.pause', v.definition || ${JSON.stringify(state)}::jsonb, ${paused.updated_at}, 'breaker', ${note}
        FROM task_version v WHERE v.task_name = ${paused.name} AND v.task_id = ${paused.id}::uuid ORDER BY v.version DESC LIMIT 1
        ON CONFLICT (task_name, version) DO NOTHING`;
      return { id: paused.id, name: paused.name, version: paused.version };
    });
  }
}
