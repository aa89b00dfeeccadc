import { Injectable } from '@nestjs/common';
import { DEFAULT_NAMESPACE, splitQualifiedName } from '@punctual/contract';
import { inShard, type LeaderFence } from './epoch-fence.js';
import { isForeignKeyViolation, isUniqueViolation } from './db-errors.js';
import { Prisma, type Task, type TaskStatus } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';
import { TaskHealthRepository, type TaskHealthRow } from './task-health.repository.js';

/** A task's cursor moved past the slots it planned. */
export interface CursorMove {
  id: string;
  /** The next slot not yet planned; null once the schedule has no more slots. */
  nextRunAt: Date | null;
  lastScheduledFor: Date | null;
  missed: number;
  /** Slots planned to run: counted down from a run limit (`remaining_runs`). */
  runs?: number;
}

/** A task whose slots could not be computed: its cursor stays, the error is shown on it. */
export interface PlanError {
  id: string;
  error: string;
}

/** How long the planner leaves a task whose slots it could not compute before trying again. */
export const PLAN_ERROR_RETRY_MS = 60_000;

export interface TaskListFilter {
  /** The namespace listed: a list never reaches past one. */
  namespace: string;
  status?: TaskStatus;
  handler?: string;
  q?: string;
  /** Tasks carrying every one of these labels (`labels @> {...}`, answered by the GIN index). */
  labels?: Record<string, string>;
  managedBy?: string;
  /** Tasks in this health state (computed from their executions: see {@link TaskHealthRepository}). */
  health?: TaskHealthRow['state'];
}

export class TaskNameTakenError extends Error {
  override readonly name = 'TaskNameTakenError';
  constructor(readonly taskName: string) {
    const { namespace, name } = splitQualifiedName(taskName);
    super(
      `a task named "${name}" already exists${namespace === DEFAULT_NAMESPACE ? '' : ` in namespace "${namespace}"`}`,
    );
  }
}

/**
 * Every field of a task and its column, for statements that write or read whole rows: the fields
 * schema.prisma generates, each mapped to its snake_case name (every `@map` of the model is that).
 */
const TASK_FIELDS = (Object.keys(Prisma.TaskScalarFieldEnum) as (keyof Task)[]).map((field): [keyof Task, string] => [
  field,
  field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
]);

/** Columns of type bigint: the driver reads them as text. */
const BIGINT_FIELDS = new Set<keyof Task>(['everyMs', 'missedCount']);

/** The columns the database derives (generated): read, never written. */
const WRITTEN_FIELDS = TASK_FIELDS.filter(([field]) => field !== 'namespace');

/**
 * The select list of a task's columns under `alias`, each renamed `<prefix><column>`, for statements
 * that read a task beside other rows (see {@link taskFromColumns}).
 */
function taskColumns(alias: string, prefix: string): string {
  return TASK_FIELDS.map(([, column]) => `${alias}.${column} AS "${prefix}${column}"`).join(', ');
}

/** The task a row read with {@link taskColumns} carries; null when its id is null (no task). */
function taskFromColumns(row: Record<string, unknown>, prefix: string): Task | null {
  if (row[`${prefix}id`] == null) return null;
  return Object.fromEntries(
    TASK_FIELDS.map(([field, column]) => {
      const value = row[`${prefix}${column}`];
      return [field, BIGINT_FIELDS.has(field) && value != null ? BigInt(value as string) : value];
    }),
  ) as unknown as Task;
}

/** Columns of a timestamp type: `to_jsonb` writes them as ISO text. */
const DATE_FIELDS = new Set<keyof Task>([
  'runAt',
  'startAt',
  'endAt',
  'nextRunAt',
  'lastScheduledFor',
  'lastErrorAt',
  'createdAt',
  'updatedAt',
]);

/** The task a row's `to_jsonb(task)` text holds (the driver leaves it unparsed, so a caller can skip it). */
export function taskFromJson(text: string): Task {
  const json = JSON.parse(text) as Record<string, unknown>;
  return Object.fromEntries(
    TASK_FIELDS.map(([field, column]) => {
      const value = json[column] ?? null;
      if (value === null) return [field, null];
      return [
        field,
        DATE_FIELDS.has(field) ? new Date(value as string) : BIGINT_FIELDS.has(field) ? BigInt(value as number) : value,
      ];
    }),
  ) as unknown as Task;
}

/** A column value as jsonb_populate_recordset reads it. */
function jsonValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** Creating tasks would take a namespace past its `maxTasks`: answered 429 `quota_exceeded`, nothing stored. */
export class QuotaExceededError extends Error {
  override readonly name = 'QuotaExceededError';
  constructor(
    readonly namespace: string,
    readonly quota: 'maxTasks',
    readonly limit: number,
    readonly used: number,
    readonly adding: number,
  ) {
    super(
      `namespace "${namespace}" holds ${used} task(s) and its quota ${quota} is ${limit}: ` +
        `${adding} more would pass it (delete tasks or raise the quota)`,
    );
  }
}

/** The namespace a task was being created in was deleted meanwhile: answered 404, nothing stored. */
export class NamespaceGoneError extends Error {
  override readonly name = 'NamespaceGoneError';
  constructor(readonly namespace: string) {
    super(`no namespace named "${namespace}"`);
  }
}

/** Owns the `task` table. */
@Injectable()
export class TasksRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(data: Prisma.TaskCreateInput, db: Db = this.prisma): Promise<Task> {
    await this.admit([data.name], db);
    try {
      return await db.task.create({ data });
    } catch (error) {
      if (isUniqueViolation(error)) throw new TaskNameTakenError(data.name);
      if (isForeignKeyViolation(error)) throw new NamespaceGoneError(splitQualifiedName(data.name).namespace);
      throw error;
    }
  }

  /**
   * Inserts complete task rows (ids and every column given) with one statement, the rows passed as
   * one JSON array: a thousand tasks cost one round trip and no per-row ORM work. Throws
   * `TaskNameTakenError` if a name exists (a concurrent create won the race).
   */
  async insertMany(tasks: Task[], db: Db): Promise<void> {
    if (tasks.length === 0) return;
    await this.admit(
      tasks.map((t) => t.name),
      db,
    );
    const rows = tasks.map((task) =>
      Object.fromEntries(WRITTEN_FIELDS.map(([field, column]) => [column, jsonValue(task[field])])),
    );
    const columns = Prisma.raw(WRITTEN_FIELDS.map(([, column]) => `"${column}"`).join(', '));
    const inserted = await db.$queryRaw<{ name: string }[]>`
      INSERT INTO task (${columns})
      SELECT ${columns} FROM jsonb_populate_recordset(NULL::task, ${JSON.stringify(rows)}::jsonb)
      ON CONFLICT (name) DO NOTHING
      RETURNING name`.catch((error: unknown) => {
      if (isForeignKeyViolation(error)) throw new NamespaceGoneError(splitQualifiedName(tasks[0]!.name).namespace);
      throw error;
    });
    if (inserted.length !== tasks.length) {
      const stored = new Set(inserted.map((r) => r.name));
      throw new TaskNameTakenError(tasks.find((t) => !stored.has(t.name))!.name);
    }
  }

  /**
   * Checks that the new tasks (by key) fit their namespaces' `max_tasks`, inside the writer's
   * transaction: each namespace's row is locked (`FOR NO KEY UPDATE`, which leaves the foreign-key
   * checks of other inserts free) before its tasks are counted, so two writers take turns and
   * neither passes the quota on a count the other is changing. A namespace without a quota costs
   * one read of its row (and takes no turn). Throws {@link QuotaExceededError}, or
   * {@link NamespaceGoneError} when the namespace was deleted after the request was let in.
   */
  private async admit(names: string[], db: Db): Promise<void> {
    const adding = new Map<string, number>();
    for (const name of names) {
      const { namespace } = splitQualifiedName(name);
      adding.set(namespace, (adding.get(namespace) ?? 0) + 1);
    }
    for (const [namespace, count] of [...adding].sort(([a], [b]) => (a < b ? -1 : 1))) {
      // Without a quota, nothing to count and no turn to take: writers of the namespace go on together.
      const [seen] = await db.$queryRaw<{ max_tasks: number | null }[]>`
        SELECT max_tasks FROM namespace WHERE name = ${namespace}`;
      if (!seen) throw new NamespaceGoneError(namespace);
      if (seen.max_tasks === null) continue;
      const [row] = await db.$queryRaw<{ max_tasks: number | null }[]>`
        SELECT max_tasks FROM namespace WHERE name = ${namespace} FOR NO KEY UPDATE`;
      if (!row) throw new NamespaceGoneError(namespace);
      if (row.max_tasks === null) continue;
      const [used] = await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM task WHERE namespace = ${namespace}`;
      const n = Number(used!.n);
      if (n + count > row.max_tasks) throw new QuotaExceededError(namespace, 'maxTasks', row.max_tasks, n, count);
    }
  }

  /**
   * Locks the named task rows (in name order, so concurrent batches cannot deadlock) for the rest of
   * the transaction. The names are joined, not matched with `= ANY`: a plan cached while the table
   * was small (or never analyzed) stays a scan, and a scan that compares each row with a thousand
   * names costs seconds at 100,000 tasks; a join hashes them at worst.
   */
  async lockByNames(names: string[], db: Db): Promise<Task[]> {
    if (names.length === 0) return [];
    const rows = await db.$queryRaw<{ id: string }[]>`
      SELECT t.id FROM unnest(${names}::text[]) AS n(name) JOIN task t ON t.name = n.name ORDER BY t.name FOR UPDATE OF t`;
    return rows.length ? db.task.findMany({ where: { id: { in: rows.map((r) => r.id) } } }) : [];
  }

  /**
   * Locks the named tasks and every task `managedBy` manages in `namespace`, in name order with one
   * statement (so concurrent applies and batches cannot deadlock), for the rest of the transaction.
   */
  async lockByNamesOrManager(names: string[], managedBy: string, namespace: string, db: Db): Promise<Task[]> {
    const rows = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM task
      WHERE id IN (
        SELECT t.id FROM unnest(${names}::text[]) AS n(name) JOIN task t ON t.name = n.name
        UNION ALL
        SELECT t.id FROM task t WHERE t.managed_by = ${managedBy} AND t.namespace = ${namespace})
      ORDER BY name FOR UPDATE`;
    return rows.length
      ? db.task.findMany({ where: { id: { in: rows.map((r) => r.id) } }, orderBy: { name: 'asc' } })
      : [];
  }

  /** The tasks {@link lockByNamesOrManager} locks, read without a lock (an apply's dry run). */
  byNamesOrManager(names: string[], managedBy: string, namespace: string, db: Db): Promise<Task[]> {
    return db.task.findMany({
      where: { OR: [{ name: { in: names } }, { managedBy, namespace }] },
      orderBy: { name: 'asc' },
    });
  }

  findByName(name: string, db: Db = this.prisma): Promise<Task | null> {
    return db.task.findUnique({ where: { name } });
  }

  findById(id: string, db: Db = this.prisma): Promise<Task | null> {
    return db.task.findUnique({ where: { id } });
  }

  findByIds(ids: string[], db: Db = this.prisma): Promise<Task[]> {
    return db.task.findMany({ where: { id: { in: ids } } });
  }

  /** Locks the named task row for the rest of the transaction. */
  async lockByName(name: string, db: Db): Promise<Task | null> {
    const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM task WHERE name = ${name} FOR UPDATE`;
    return rows[0] ? db.task.findUnique({ where: { id: rows[0].id } }) : null;
  }

  /**
   * Tasks ordered by name, keyset-paginated after `afterName`. The filter is SQL of its own: the
   * label containment (`@>`, served by the GIN index) has no Prisma spelling.
   */
  async list(filter: TaskListFilter, limit: number, afterName?: string): Promise<Task[]> {
    const like = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const health = filter.health ? TaskHealthRepository.inState(filter.health) : null;
    const conditions = [
      Prisma.sql`t.namespace = ${filter.namespace}`,
      filter.status && Prisma.sql`t.status = ${filter.status}::task_status`,
      filter.handler && Prisma.sql`t.handler = ${filter.handler}`,
      filter.managedBy && Prisma.sql`t.managed_by = ${filter.managedBy}`,
      filter.labels &&
        Object.keys(filter.labels).length > 0 &&
        Prisma.sql`t.labels @> ${JSON.stringify(filter.labels)}::jsonb`,
      // The key holds the namespace (`team-a/…`): the name itself must match, not its prefix — the
      // bare name, as the trigram index holds it (task_bare_name_trgm_idx).
      filter.q &&
        Prisma.sql`(substr(t.name, strpos(t.name, '/') + 1) ILIKE ${like(filter.q)} OR t.description ILIKE ${like(filter.q)})`,
      afterName !== undefined && Prisma.sql`t.name > ${afterName}`,
      health?.where,
    ].filter((c): c is Prisma.Sql => Boolean(c));
    const where = conditions.length ? Prisma.sql`WHERE ${Prisma.join(conditions, ' AND ')}` : Prisma.empty;
    const join = health?.join ?? Prisma.empty;
    // A search finds its matches through the trigram indexes first, then orders them: walking the
    // name index in order and testing each name reads most of the table when the matches sort late
    // (`idle-98` among a million `idle-…`: 0.5 s), where the matches alone cost milliseconds.
    const ids = filter.q
      ? await this.prisma.$queryRaw<{ id: string }[]>`
          WITH m AS MATERIALIZED (SELECT t.id, t.name FROM task t ${join} ${where})
          SELECT id FROM m ORDER BY name LIMIT ${limit}`
      : await this.prisma.$queryRaw<
          { id: string }[]
        >`SELECT t.id FROM task t ${join} ${where} ORDER BY t.name LIMIT ${limit}`;
    if (ids.length === 0) return [];
    return this.prisma.task.findMany({ where: { id: { in: ids.map((r) => r.id) } }, orderBy: { name: 'asc' } });
  }

  /**
   * Changes a task, bumping its version; `replans` (a change to what runs or when) bumps its plan
   * version too, which planned executions are checked against.
   */
  update(id: string, data: Prisma.TaskUpdateInput, options: { replans: boolean; at?: Date }, db: Db): Promise<Task> {
    return db.task.update({
      where: { id },
      data: {
        ...data,
        version: { increment: 1 },
        ...(options.replans && { planVersion: { increment: 1 } }),
        updatedAt: options.at ?? new Date(),
      },
    });
  }

  delete(id: string, db: Db): Promise<Task> {
    return db.task.delete({ where: { id } });
  }

  /**
   * Locks up to `limit` active tasks due for planning, skipping rows another transaction holds:
   * first those whose cursor is at or before `horizon`, oldest cursor first, then one-offs whose
   * instant is at or before `oneOffHorizon` (a campaign is planned as it is created, not in the
   * last seconds before its instant). Each is one ordered scan of a partial index, so idle and
   * paused tasks cost nothing; whole rows in one statement each. A task whose last planning
   * failed waits {@link PLAN_ERROR_RETRY_MS}. Only tasks of the leader's shard (`shard`).
   */
  async lockDue(horizon: Date, oneOffHorizon: Date, limit: number, db: Db, shard: LeaderFence = 0n): Promise<Task[]> {
    const lock = async (where: Prisma.Sql, n: number) => {
      const rows = await db.$queryRaw<Record<string, unknown>[]>`
        SELECT ${Prisma.raw(taskColumns('task', 't_'))} FROM task WHERE ${where} ${inShard(Prisma.sql`id`, shard)} ORDER BY next_run_at LIMIT ${n} FOR UPDATE SKIP LOCKED`;
      return rows.map((row) => taskFromColumns(row, 't_')!);
    };
    const due = await lock(dueBy(horizon), limit);
    if (due.length >= limit || oneOffHorizon <= horizon) return due;
    return due.concat(await lock(oneOffDueBy(horizon, oneOffHorizon), limit - due.length));
  }

  /** Whether {@link lockDue} would find a task (locked ones included): two indexed looks, no transaction. */
  async anyDue(horizon: Date, oneOffHorizon: Date, shard: LeaderFence = 0n): Promise<boolean> {
    const of = inShard(Prisma.sql`id`, shard);
    const [row] = await this.prisma.$queryRaw<{ due: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM task WHERE ${dueBy(horizon)} ${of}) OR EXISTS (SELECT 1 FROM task WHERE ${oneOffDueBy(horizon, oneOffHorizon)} ${of}) AS due`;
    return row!.due;
  }

  /**
   * Moves many cursors in one statement; a task whose schedule has no more slots (cursor null) is
   * `completed`. A task planned again after an error has the error cleared. A task whose run limit
   * this spends gets an audit entry `task.complete` by `scheduler` (its last definition, completed,
   * with the last slot planned as `lastScheduledFor`): the timeline reads the slots after it as
   * not planned for the run limit.
   */
  async advanceCursors(advances: CursorMove[], db: Db): Promise<void> {
    if (advances.length === 0) return;
    const at = (d: Date | null) => d?.toISOString() ?? null;
    await db.$executeRaw`
      WITH moved AS (
        UPDATE task t SET
          next_run_at = u.next_run_at,
          last_scheduled_for = COALESCE(u.last_scheduled_for, t.last_scheduled_for),
          missed_count = t.missed_count + u.missed,
          remaining_runs = CASE WHEN t.remaining_runs IS NULL THEN NULL ELSE GREATEST(0, t.remaining_runs - u.runs) END,
          status = CASE WHEN u.next_run_at IS NULL THEN 'completed'::task_status ELSE t.status END,
          last_error = NULL,
          last_error_at = NULL
        FROM unnest(
          ${advances.map((a) => a.id)}::uuid[],
          ${advances.map((a) => at(a.nextRunAt))}::timestamptz[],
          ${advances.map((a) => at(a.lastScheduledFor))}::timestamptz[],
          ${advances.map((a) => a.missed)}::bigint[],
          ${advances.map((a) => a.runs ?? 0)}::int[]
        ) AS u(id, next_run_at, last_scheduled_for, missed, runs)
        JOIN task o ON o.id = u.id
        WHERE t.id = u.id
        RETURNING t.name, t.last_scheduled_for, o.remaining_runs > 0 AND t.remaining_runs = 0 AS spent
      )
      INSERT INTO audit_log (actor, action, target, before, after)
      SELECT 'scheduler', 'task.complete', m.name, a.after,
        jsonb_set(a.after, '{schedule,remainingRuns}', '0'::jsonb)
          || jsonb_build_object('status', 'completed', 'lastScheduledFor', to_char(m.last_scheduled_for AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      FROM moved m
      CROSS JOIN LATERAL (
        SELECT a.after FROM audit_log a WHERE a.target = m.name AND a.after IS NOT NULL AND a.action LIKE 'task.%' ORDER BY a.id DESC LIMIT 1
      ) a
      WHERE m.spent AND a.after ? 'schedule'`;
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

  /** Records planning errors: the tasks stay active with their cursor where it was. */
  async recordPlanErrors(errors: PlanError[], db: Db): Promise<void> {
    if (errors.length === 0) return;
    await db.$executeRaw`
      UPDATE task t SET last_error = u.error, last_error_at = now()
      FROM unnest(${errors.map((e) => e.id)}::uuid[], ${errors.map((e) => e.error.slice(0, 2000))}::text[]) AS u(id, error)
      WHERE t.id = u.id`;
  }
}

/** Except a task whose planning failed a moment ago. */
const retryable = Prisma.sql`(last_error_at IS NULL OR last_error_at < now() - ${PLAN_ERROR_RETRY_MS} * interval '1 millisecond')`;

/** Active tasks whose cursor is at or before `horizon` (`task_next_run_active_idx`). */
const dueBy = (horizon: Date) =>
  Prisma.sql`status = 'active' AND next_run_at <= ${horizon.toISOString()}::timestamptz AND ${retryable}`;

/** Active one-offs due after `horizon`, by `oneOffHorizon` (`task_one_off_due_idx`). */
const oneOffDueBy = (horizon: Date, oneOffHorizon: Date) => Prisma.sql`
  status = 'active' AND schedule_kind = 'at' AND next_run_at > ${horizon.toISOString()}::timestamptz
  AND next_run_at <= ${oneOffHorizon.toISOString()}::timestamptz AND ${retryable}`;
