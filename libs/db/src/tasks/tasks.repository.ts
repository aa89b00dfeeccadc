import { Injectable } from '@nestjs/common';
import { splitQualifiedName } from '@punctual/contract';
import { isForeignKeyViolation, isUniqueViolation } from '../db-errors.js';
import { Prisma, type Task, type TaskStatus } from '../generated/prisma/client.js';
import { PrismaService, type Db } from '../prisma.service.js';
import { NamespaceGoneError, QuotaExceededError, TaskNameTakenError } from './task-errors.js';
import { TaskHealthRepository, type TaskHealthRow } from './task-health.repository.js';
import { jsonValue, WRITTEN_FIELDS } from './task.row.js';

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

/** Owns the `task` table's rows: create, read, list, update and delete, within the namespaces' quotas. */
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
}
