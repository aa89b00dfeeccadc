import { Injectable } from '@nestjs/common';
import { quotaRunsInUseSql } from './executions/claim/flow-statements.js';
import { type Namespace, Prisma } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

/** A namespace with what it uses of its quotas now. */
export interface NamespaceInUse extends Namespace {
  tasks: number;
  /** Its runs running now. */
  running: number;
  /** Its starts in the last minute counted under `maxRunsPerMinute` (recorded while it is set). */
  startsInMinute: number;
}

/** The fields of a namespace an admin sets (a type, not an interface: it is written as JSON to the audit log). */
export type NamespaceFields = {
  description: string | null;
  maxTasks: number | null;
  maxRunsPerMinute: number | null;
  maxConcurrentRuns: number | null;
  /** Its own retention of ended executions and of dead letters, in milliseconds (null: the cluster's). */
  historyRetentionMs: number | null;
  deadLetterRetentionMs: number | null;
};

/** The quotas counted in `punctual_namespace_quota_used`. */
export type QuotaMetric = 'maxTasks' | 'maxRunsPerMinute' | 'maxConcurrentRuns';

/** Owns `namespace`: teams' (or customers') shares of the cluster and their quotas. */
@Injectable()
export class NamespacesRepository {
  constructor(private readonly prisma: PrismaService) {}

  async exists(name: string): Promise<boolean> {
    const rows = await this.prisma.$queryRaw<unknown[]>`SELECT 1 FROM namespace WHERE name = ${name}`;
    return rows.length > 0;
  }

  /**
   * A page of namespaces by name, after `after`, those of `names` only (a scoped key's; null: all)
   * and starting with `prefix`: the use of a page's namespaces only, however many the cluster holds.
   */
  async list(
    names: readonly string[] | null,
    page: { limit: number; after?: string; prefix?: string },
  ): Promise<NamespaceInUse[]> {
    const rows = await this.prisma.namespace.findMany({
      where: {
        AND: [
          names ? { name: { in: [...names] } } : {},
          page.after !== undefined ? { name: { gt: page.after } } : {},
          page.prefix ? { name: { startsWith: page.prefix } } : {},
        ],
      },
      orderBy: { name: 'asc' },
      take: page.limit,
    });
    return this.withUse(rows);
  }

  async get(name: string): Promise<NamespaceInUse | null> {
    const row = await this.prisma.namespace.findUnique({ where: { name } });
    return row ? ((await this.withUse([row]))[0] ?? null) : null;
  }

  /** Creates or replaces a namespace's fields; `before` is null when it was created. */
  async put(name: string, fields: NamespaceFields, db: Db): Promise<{ before: Namespace | null; after: Namespace }> {
    const before = await db.namespace.findUnique({ where: { name } });
    const bigint = (ms: number | null) => (ms === null ? null : BigInt(ms));
    const row = {
      ...fields,
      historyRetentionMs: bigint(fields.historyRetentionMs),
      deadLetterRetentionMs: bigint(fields.deadLetterRetentionMs),
    };
    const after = await db.namespace.upsert({
      where: { name },
      create: { name, ...row },
      update: { ...row, updatedAt: new Date() },
    });
    return { before, after };
  }

  /**
   * Deletes a namespace that holds no task and no calendar, and with it everything that still
   * names it — the history of its deleted tasks (executions and their events, versions), its audit
   * entries, its flow-control starts — and every key's access to it: a key of it alone is revoked,
   * a key of it and others keeps the others. A namespace created again by the same name starts
   * empty, and no old key sees it. Answers what it held otherwise (and deletes nothing); null when
   * there is no such namespace.
   */
  async delete(name: string, db: Db): Promise<{ deleted: Namespace } | { tasks: number; calendars: number } | null> {
    const row = await db.namespace.findUnique({ where: { name } });
    if (!row) return null;
    await this.lock(name, db);
    const [held] = await db.$queryRaw<{ tasks: bigint; calendars: bigint }[]>`
      SELECT (SELECT count(*) FROM task WHERE namespace = ${name}) AS tasks,
             (SELECT count(*) FROM calendar WHERE namespace = ${name}) AS calendars`;
    const tasks = Number(held!.tasks);
    const calendars = Number(held!.calendars);
    if (tasks > 0 || calendars > 0) return { tasks, calendars };
    const prefix = `${name}/%`;
    await db.$executeRaw`DELETE FROM task_execution WHERE namespace = ${name}`;
    await db.$executeRaw`DELETE FROM task_version WHERE task_name LIKE ${prefix}`;
    await db.$executeRaw`DELETE FROM audit_log WHERE namespace = ${name}`;
    await db.$executeRaw`DELETE FROM flow_start WHERE key LIKE ${prefix}`;
    await db.$executeRaw`DELETE FROM quota_start WHERE namespace = ${name}`;
    await db.$executeRaw`DELETE FROM overrun_permit WHERE key LIKE ${prefix}`;
    // A key left with no namespace would be a key of the whole cluster: revoked instead.
    await db.$executeRaw`
      UPDATE api_key SET revoked_at = now() WHERE revoked_at IS NULL AND namespaces = ARRAY[${name}]::text[]`;
    await db.$executeRaw`
      UPDATE api_key SET namespaces = array_remove(namespaces, ${name})
      WHERE ${name} = ANY(namespaces) AND cardinality(namespaces) > 1`;
    await db.namespace.delete({ where: { name } });
    return { deleted: row };
  }

  /**
   * The `limit` quotas nearest their limit (use ÷ limit, highest first) across every namespace, for
   * the metrics: a bounded set of series however many namespaces there are. Each count reads its
   * namespace's range of an index (its tasks by name, its runs running, its starts in the minute).
   */
  async nearestQuota(limit: number): Promise<{ namespace: string; quota: QuotaMetric; used: number; limit: number }[]> {
    return this.prisma.$queryRaw<{ namespace: string; quota: QuotaMetric; used: number; limit: number }[]>`
      SELECT namespace, quota, used, "limit" FROM (
        SELECT n.name AS namespace, 'maxTasks' AS quota, c.used, n.max_tasks AS "limit" FROM namespace n
        CROSS JOIN LATERAL (SELECT count(*)::int AS used FROM task t WHERE t.namespace = n.name) c
        WHERE n.max_tasks IS NOT NULL
        UNION ALL
        SELECT n.name, 'maxConcurrentRuns', c.used, n.max_concurrent_runs FROM namespace n
        CROSS JOIN LATERAL (SELECT ${Prisma.raw(quotaRunsInUseSql('n.name'))}::int AS used) c
        WHERE n.max_concurrent_runs IS NOT NULL
        UNION ALL
        SELECT n.name, 'maxRunsPerMinute', c.used, n.max_runs_per_minute FROM namespace n
        CROSS JOIN LATERAL (
          SELECT count(*)::int AS used FROM quota_start f WHERE f.namespace = n.name AND f.at > now() - interval '1 minute'
        ) c
        WHERE n.max_runs_per_minute IS NOT NULL
      ) q
      ORDER BY used::float8 / GREATEST("limit", 1) DESC, namespace, quota LIMIT ${limit}`;
  }

  private async lock(name: string, db: Db): Promise<void> {
    await db.$queryRaw`SELECT 1 FROM namespace WHERE name = ${name} FOR UPDATE`;
  }

  private async withUse(rows: Namespace[]): Promise<NamespaceInUse[]> {
    if (rows.length === 0) return [];
    // Runs running: the few rows of the running index, whatever the history holds.
    const counts = await this.prisma.$queryRaw<{ namespace: string; tasks: number; running: number; starts: number }[]>`
      SELECT ns.name AS namespace,
        (SELECT count(*) FROM task t WHERE t.namespace = ns.name)::int AS tasks,
        ${Prisma.raw(quotaRunsInUseSql('ns.name'))}::int AS running,
        (SELECT count(*) FROM quota_start f WHERE f.namespace = ns.name AND f.at > now() - interval '1 minute')::int AS starts
      FROM unnest(${rows.map((r) => r.name)}::text[]) AS ns(name)`;
    const use = new Map(counts.map((c) => [c.namespace, c]));
    return rows.map((row) => ({
      ...row,
      tasks: use.get(row.name)?.tasks ?? 0,
      running: use.get(row.name)?.running ?? 0,
      startsInMinute: use.get(row.name)?.starts ?? 0,
    }));
  }
}
