import { Injectable } from '@nestjs/common';
import { PRUNE_BATCH, RetentionRules, type RetentionSettings, type TableCutoffs } from '@punctual/planning';
import { Prisma } from '../generated/prisma/client.js';
import { type Db, PrismaService } from '../prisma.service.js';
import { type HistoryPartition, partitionIdent } from './history-partitions.repository.js';

/** A slot that fails its task's health: dead, missed, or skipped as late (as task health counts it). */
const FAILURE = `(x.status IN ('dead', 'missed') OR (x.status = 'skipped' AND x.skip_reason = 'late'))`;
/** A slot that finished, well or not (an overlap skip or a cancel is neither). */
const FINISHED = `(x.status = 'succeeded' OR ${FAILURE})`;
const ENDED = `x.status IN ('succeeded', 'dead', 'skipped', 'missed', 'cancelled')`;

/** How many rows a pass removed from each table beside the history (see {@link HistoryPruneRepository.pruneTables}). */
export type PrunedCounts = Record<
  'outbox' | 'audit_log' | 'task_version' | 'flow_start' | 'quota_start' | 'shard_leadership' | 'overrun_permit',
  number
>;

/**
 * The statements that carry out the retention rules (`RetentionRules` in `@punctual/planning`):
 * what of a partition is past its retention, what the task health keeps of it before it goes, the
 * removal itself, and the tables beside the history. Every removal is bounded: a partition's rows
 * go in batches or with the partition; the small tables lose at most {@link PRUNE_BATCH} rows a
 * statement.
 */
@Injectable()
export class HistoryPruneRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * The rules in force: the cluster's retentions, each namespace's own, over the longest `maxDelay`
   * of any task.
   */
  async rules(cluster: RetentionSettings): Promise<RetentionRules> {
    const [namespaces, [floor]] = await Promise.all([
      this.prisma.$queryRaw<{ namespace: string; history_ms: bigint | null; dead_ms: bigint | null }[]>`
        SELECT name AS namespace, history_retention_ms AS history_ms, dead_letter_retention_ms AS dead_ms FROM namespace
        WHERE history_retention_ms IS NOT NULL OR dead_letter_retention_ms IS NOT NULL`,
      this.prisma.$queryRaw<{ floor: number | null }[]>`SELECT max(max_delay_ms)::float8 AS floor FROM task`,
    ]);
    const own = namespaces.map((n) => ({
      namespace: n.namespace,
      historyMs: n.history_ms === null ? null : Number(n.history_ms),
      deadLettersMs: n.dead_ms === null ? null : Number(n.dead_ms),
    }));
    return new RetentionRules(cluster, own, Number(floor?.floor ?? 0));
  }

  /**
   * Of a partition's rows `x`, those past their retention at `now`, as SQL: an ended row past its
   * namespace's history retention, a dead letter past its dead-letter retention.
   */
  expired(rules: RetentionRules, now: Date): Prisma.Sql {
    const ms = (kind: 'historyMs' | 'deadLettersMs') => {
      const cases = rules.overrides().map(([ns, r]) => Prisma.sql`WHEN ${ns} THEN ${r[kind]}::bigint`);
      const base = rules.of('\u0000')[kind];
      return cases.length
        ? Prisma.sql`(CASE x.namespace ${Prisma.join(cases, ' ')} ELSE ${base}::bigint END)`
        : Prisma.sql`${base}::bigint`;
    };
    const at = now.toISOString();
    return Prisma.sql`(${Prisma.raw(ENDED)} AND x.scheduled_for < ${at}::timestamptz - interval '1 millisecond' *
      CASE WHEN x.status = 'dead' THEN ${ms('deadLettersMs')} ELSE ${ms('historyMs')} END)`;
  }

  /** How many rows a partition holds. One scan of it. */
  async countRows(partition: HistoryPartition): Promise<number> {
    const [row] = await this.prisma.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::float8 AS n FROM ${partitionIdent(partition.executions)}`,
    );
    return Number(row?.n ?? 0);
  }

  /** How many of a partition's rows are past their retention, of how many. One scan of the partition. */
  async countExpired(partition: HistoryPartition, expired: Prisma.Sql): Promise<{ expired: number; total: number }> {
    const table = Prisma.raw(partitionIdent(partition.executions));
    const [row] = await this.prisma.$queryRaw<{ expired: number; total: number }[]>`
      SELECT (count(*) FILTER (WHERE ${expired}))::float8 AS expired, count(*)::float8 AS total FROM ${table} x`;
    return { expired: Number(row?.expired ?? 0), total: Number(row?.total ?? 0) };
  }

  /**
   * Keeps, before rows of a partition go (`going`, over `x`; null: all of them), what a task's health and its last run
   * are read from (`task_history`): per task, the latest success, the failures after it, the latest
   * finished slot, the latest slot and the latest execution — merged with what earlier removals
   * kept. A row older than what was already kept of its task (`pruned_through`) is not counted
   * again, so a removal cut short and begun again counts nothing twice. One scan of the partition,
   * then per task a few lookups in its own slots.
   */
  async keepTaskHistory(partition: HistoryPartition, going: Prisma.Sql | null, db: Db = this.prisma): Promise<number> {
    const table = Prisma.raw(partitionIdent(partition.executions));
    const removed = going ?? Prisma.sql`TRUE`;
    return db.$executeRaw`
      WITH gone AS (
        SELECT x.task_id,
          max(x.scheduled_for) FILTER (WHERE x.status = 'succeeded') AS success_slot,
          max(x.scheduled_for) FILTER (WHERE ${Prisma.raw(FINISHED)}) AS finished_slot,
          max(x.scheduled_for) AS last_slot
        FROM ${table} x LEFT JOIN task_history h ON h.task_id = x.task_id
        WHERE x.task_id IS NOT NULL AND ${removed} AND x.scheduled_for > COALESCE(h.pruned_through, '-infinity')
        GROUP BY x.task_id
      ),
      merged AS (
        SELECT g.*, h.task_id IS NOT NULL AS known,
          CASE WHEN h.last_success_slot IS NULL OR g.success_slot > h.last_success_slot THEN g.success_slot ELSE h.last_success_slot END AS new_success_slot,
          h.last_success_slot AS old_success_slot, h.failures_since_success AS old_failures,
          h.last_finished_slot AS old_finished_slot, h.last_slot AS old_last_slot, h.pruned_through AS old_through
        FROM gone g LEFT JOIN task_history h ON h.task_id = g.task_id
      )
      INSERT INTO task_history AS h (task_id, last_success_slot, last_success_at, failures_since_success, last_finished_slot,
                                     last_finished_ok, last_slot, last_execution, pruned_through)
      SELECT m.task_id, m.new_success_slot,
        (SELECT x.finished_at FROM ${table} x WHERE x.task_id = m.task_id AND x.scheduled_for = m.new_success_slot),
        CASE WHEN m.known AND m.new_success_slot IS NOT DISTINCT FROM m.old_success_slot THEN m.old_failures ELSE 0 END
          + (SELECT count(*)::int FROM ${table} x
             WHERE x.task_id = m.task_id AND ${removed} AND ${Prisma.raw(FAILURE)}
               AND x.scheduled_for > COALESCE(m.new_success_slot, '-infinity') AND x.scheduled_for > COALESCE(m.old_through, '-infinity')),
        GREATEST(m.finished_slot, m.old_finished_slot),
        (SELECT x.status = 'succeeded' FROM ${table} x WHERE x.task_id = m.task_id AND x.scheduled_for = m.finished_slot),
        GREATEST(m.last_slot, m.old_last_slot),
        (SELECT to_jsonb(x) FROM ${table} x WHERE x.task_id = m.task_id AND x.scheduled_for = m.last_slot),
        GREATEST(m.last_slot, m.old_through)
      FROM merged m
      ON CONFLICT (task_id) DO UPDATE SET
        last_success_slot = EXCLUDED.last_success_slot,
        last_success_at = COALESCE(EXCLUDED.last_success_at, h.last_success_at),
        failures_since_success = EXCLUDED.failures_since_success,
        last_finished_slot = EXCLUDED.last_finished_slot,
        last_finished_ok = CASE WHEN EXCLUDED.last_finished_slot IS NOT DISTINCT FROM h.last_finished_slot THEN h.last_finished_ok ELSE EXCLUDED.last_finished_ok END,
        last_slot = EXCLUDED.last_slot,
        last_execution = CASE WHEN EXCLUDED.last_slot IS NOT DISTINCT FROM h.last_slot THEN h.last_execution ELSE EXCLUDED.last_execution END,
        pruned_through = EXCLUDED.pruned_through`;
  }

  /**
   * Removes up to `limit` of a partition's rows past their retention, with their events, in one
   * statement. Returns how many went: fewer than `limit` when none are left.
   */
  async deleteExpired(partition: HistoryPartition, expired: Prisma.Sql, limit: number): Promise<number> {
    const table = Prisma.raw(partitionIdent(partition.executions));
    const events = Prisma.raw(partitionIdent(partition.events));
    const [row] = await this.prisma.$queryRaw<{ removed: number }[]>`
      WITH gone AS (
        DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM ${table} x WHERE ${expired} LIMIT ${limit}))
        RETURNING id
      ),
      gone_events AS (DELETE FROM ${events} ev WHERE ev.execution_id IN (SELECT id FROM gone))
      SELECT count(*)::int AS removed FROM gone`;
    return row?.removed ?? 0;
  }

  /**
   * Replaces a partition by one holding only its rows not past their retention (and their events):
   * the rows that stay are copied into a table of their own while the old partition takes no writes,
   * the new one gets every key, index and constraint of a partition before it is attached, and the
   * swap itself — detach the old, attach the new, drop the old — holds the tables' exclusive lock for
   * a few catalog changes only (given up after `lockTimeoutMs` of waiting for it, to try again later).
   * The disk of the rows that went comes back at once. Returns how many rows stayed.
   */
  async compact(partition: HistoryPartition, expired: Prisma.Sql, lockTimeoutMs: number): Promise<number> {
    const { executions, events } = partition;
    const kept = { executions: `${executions}_kept`, events: `${events}_kept` };
    const from = partition.from === null ? 'MINVALUE' : `'${partition.from.toISOString()}'`;
    const bound = `FOR VALUES FROM (${from}) TO ('${partition.to.toISOString()}')`;
    return this.prisma.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '${Math.max(1, Math.round(lockTimeoutMs))}ms'`);
        await tx.$executeRawUnsafe(`LOCK TABLE ${partitionIdent(executions)}, ${partitionIdent(events)} IN SHARE MODE`);
        await tx.$executeRawUnsafe(`DROP TABLE IF EXISTS "${kept.executions}", "${kept.events}"`);
        await tx.$executeRawUnsafe(
          `CREATE TABLE "${kept.executions}" (LIKE ${partitionIdent(executions)} INCLUDING ALL) WITH (fillfactor = 85)`,
        );
        await tx.$executeRawUnsafe(`CREATE TABLE "${kept.events}" (LIKE ${partitionIdent(events)} INCLUDING ALL)`);
        const columns = await tx.$queryRaw<{ name: string }[]>`
          SELECT attname AS name FROM pg_attribute
          WHERE attrelid = ${executions}::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
          ORDER BY attnum`;
        const list = columns.map((c) => `"${c.name}"`).join(', ');
        const stayed = await tx.$executeRaw`
          INSERT INTO ${Prisma.raw(`"${kept.executions}"`)} (${Prisma.raw(list)})
          SELECT ${Prisma.raw(list)} FROM ${Prisma.raw(partitionIdent(executions))} x WHERE NOT ${expired}`;
        await tx.$executeRawUnsafe(
          `INSERT INTO "${kept.events}" SELECT ev.* FROM ${partitionIdent(events)} ev
           WHERE ev.execution_id IN (SELECT id FROM "${kept.executions}")`,
        );
        // What a partition must have, made before the swap so that attaching has nothing left to build
        // or check: the slot range (proves the bound), the key to tasks, and the id's own check.
        const range = `CHECK (scheduled_for >= ${from === 'MINVALUE' ? "'-infinity'" : from} AND scheduled_for < '${partition.to.toISOString()}')`;
        await tx.$executeRawUnsafe(
          `ALTER TABLE "${kept.executions}" ADD CONSTRAINT "${kept.executions}_range" ${range}`,
        );
        await tx.$executeRawUnsafe(`ALTER TABLE "${kept.events}" ADD CONSTRAINT "${kept.events}_range" ${range}`);
        await tx.$executeRawUnsafe(
          `ALTER TABLE "${kept.executions}" ADD CONSTRAINT "${kept.executions}_task_id_fkey" FOREIGN KEY (task_id) REFERENCES task(id) ON DELETE SET NULL ON UPDATE CASCADE`,
        );
        // The swap: the parents' exclusive lock, for catalog changes only.
        await tx.$executeRawUnsafe(`ALTER TABLE task_execution DETACH PARTITION ${partitionIdent(executions)}`);
        await tx.$executeRawUnsafe(`ALTER TABLE task_execution ATTACH PARTITION "${kept.executions}" ${bound}`);
        await tx.$executeRawUnsafe(`ALTER TABLE execution_event DETACH PARTITION ${partitionIdent(events)}`);
        await tx.$executeRawUnsafe(`ALTER TABLE execution_event ATTACH PARTITION "${kept.events}" ${bound}`);
        await tx.$executeRawUnsafe(`DROP TABLE ${partitionIdent(executions)}, ${partitionIdent(events)}`);
        await tx.$executeRawUnsafe(`ALTER TABLE "${kept.executions}" RENAME TO ${partitionIdent(executions)}`);
        await tx.$executeRawUnsafe(`ALTER TABLE "${kept.events}" RENAME TO ${partitionIdent(events)}`);
        return stayed;
      },
      { timeout: 600_000, maxWait: 10_000 },
    );
  }

  /**
   * Removes from the tables beside the history what their rules let go (see `RetentionRules.cutoffs`),
   * {@link PRUNE_BATCH} rows a statement, each table until it has nothing left to give or `budgetMs`
   * has passed. Returns how many rows went from each.
   */
  async pruneTables(cutoffs: TableCutoffs, budgetMs = 10_000): Promise<PrunedCounts> {
    const iso = (d: Date) => d.toISOString();
    const batch = PRUNE_BATCH;
    // The rate keys and namespaces that have starts, found one index probe each (a skip scan of the
    // (key, at) index), and their old starts through the same index: no scan of every start.
    const startsBefore = (table: 'flow_start' | 'quota_start', column: 'key' | 'namespace', cutoff: Date) => {
      const t = Prisma.raw(table);
      const c = Prisma.raw(column);
      return Prisma.sql`
        WITH RECURSIVE k AS (
          (SELECT ${c} AS v FROM ${t} ORDER BY ${c} LIMIT 1)
          UNION ALL
          SELECT (SELECT f.${c} FROM ${t} f WHERE f.${c} > k.v ORDER BY f.${c} LIMIT 1) FROM k WHERE k.v IS NOT NULL
        )
        DELETE FROM ${t} WHERE id IN (
          SELECT s.id FROM k CROSS JOIN LATERAL (
            SELECT f.id FROM ${t} f WHERE f.${c} = k.v AND f.at < ${iso(cutoff)}::timestamptz LIMIT ${batch}) s
          WHERE k.v IS NOT NULL LIMIT ${batch})`;
    };
    const statements: [keyof PrunedCounts, Prisma.Sql][] = [
      // Delivered, or given up (kept with delivered_at at the epoch, for inspection, as long as a delivered one).
      [
        'outbox',
        Prisma.sql`DELETE FROM outbox WHERE id IN (
          SELECT id FROM outbox WHERE delivered_at IS NOT NULL AND GREATEST(delivered_at, created_at) < ${iso(cutoffs.outbox)}::timestamptz LIMIT ${batch})`,
      ],
      // The latest entry of a target says what is in force: it stays, however old.
      [
        'audit_log',
        Prisma.sql`DELETE FROM audit_log a WHERE a.id IN (
          SELECT o.id FROM audit_log o WHERE o.at < ${iso(cutoffs.audit)}::timestamptz
            AND EXISTS (SELECT 1 FROM audit_log n WHERE n.target = o.target AND n.id > o.id)
          ORDER BY o.at LIMIT ${batch})`,
      ],
      // A version that old, unless it is the one its task is at (a deleted task's last one goes too).
      [
        'task_version',
        Prisma.sql`DELETE FROM task_version v WHERE (v.task_name, v.version) IN (
          SELECT o.task_name, o.version FROM task_version o
          WHERE o.changed_at < ${iso(cutoffs.versions)}::timestamptz
            AND (EXISTS (SELECT 1 FROM task_version n WHERE n.task_name = o.task_name AND n.version > o.version)
                 OR NOT EXISTS (SELECT 1 FROM task t WHERE t.name = o.task_name))
          ORDER BY o.changed_at LIMIT ${batch})`,
      ],
      ['flow_start', startsBefore('flow_start', 'key', cutoffs.flowStarts)],
      ['quota_start', startsBefore('quota_start', 'namespace', cutoffs.quotaStarts)],
      [
        'shard_leadership',
        Prisma.sql`DELETE FROM shard_leadership WHERE (shard, epoch) IN (
          SELECT shard, epoch FROM shard_leadership WHERE heartbeat_at < ${iso(cutoffs.leadership)}::timestamptz LIMIT ${batch})`,
      ],
      // A permit an hour past its end: its worker died without giving it back.
      [
        'overrun_permit',
        Prisma.sql`DELETE FROM overrun_permit WHERE attempt_id IN (
          SELECT attempt_id FROM overrun_permit WHERE until < ${iso(cutoffs.permits)}::timestamptz LIMIT ${batch})`,
      ],
    ];
    const counts = Object.fromEntries(statements.map(([table]) => [table, 0])) as PrunedCounts;
    const until = Date.now() + budgetMs;
    for (const [table, statement] of statements) {
      for (;;) {
        const removed = await this.prisma.$executeRaw(statement);
        counts[table] += removed;
        if (removed < batch || Date.now() > until) break;
      }
    }
    // A deleted task's guard and kept health: nothing reads them any more (few rows: one per task).
    await this.prisma
      .$executeRaw`DELETE FROM task_run_guard g WHERE NOT EXISTS (SELECT 1 FROM task t WHERE t.id = g.task_id)`;
    await this.prisma
      .$executeRaw`DELETE FROM task_history k WHERE NOT EXISTS (SELECT 1 FROM task t WHERE t.id = k.task_id)`;
    return counts;
  }

  /**
   * The oldest row each table beside the history keeps (null: empty): what `punctual_history_oldest_seconds`
   * shows (the history tables' own are their oldest partition's, see HistoryKeeper).
   */
  async oldestBeside(): Promise<Record<'outbox' | 'audit_log' | 'task_version' | 'shard_leadership', Date | null>> {
    const [row] = await this.prisma.$queryRaw<
      Record<'outbox' | 'audit_log' | 'task_version' | 'shard_leadership', Date | null>[]
    >`
      SELECT (SELECT min(created_at) FROM outbox) AS outbox,
        (SELECT min(at) FROM audit_log) AS audit_log,
        (SELECT min(changed_at) FROM task_version) AS task_version,
        (SELECT min(acquired_at) FROM shard_leadership) AS shard_leadership`;
    return row!;
  }

  /** The oldest slot a partition holds (null: it is empty). One look at each row at most: for a small or a compacted partition. */
  async oldestSlotIn(partition: HistoryPartition): Promise<Date | null> {
    const [row] = await this.prisma.$queryRawUnsafe<{ slot: Date | null }[]>(
      `SELECT min(scheduled_for) AS slot FROM ${partitionIdent(partition.executions)}`,
    );
    return row?.slot ?? null;
  }

  /** Whether a partition holds any row at all. */
  async isEmpty(partition: HistoryPartition): Promise<boolean> {
    const [row] = await this.prisma.$queryRawUnsafe<{ empty: boolean }[]>(
      `SELECT NOT EXISTS (SELECT 1 FROM ${partitionIdent(partition.executions)}) AS empty`,
    );
    return row?.empty ?? true;
  }
}
