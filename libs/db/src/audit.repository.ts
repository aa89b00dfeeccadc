import { Injectable } from '@nestjs/common';
import type { AuditLog, Prisma } from './generated/prisma/client.js';
import { PrismaService, type Db } from './prisma.service.js';

export interface AuditEntry {
  actor: string;
  action: string;
  target: string;
  before?: Prisma.InputJsonValue | null;
  after?: Prisma.InputJsonValue | null;
}

/** Owns `audit_log`: who changed what, before and after. Append-only. */
@Injectable()
export class AuditRepository {
  constructor(private readonly prisma: PrismaService) {}

  async record(entry: AuditEntry, db: Db = this.prisma): Promise<void> {
    await db.auditLog.create({
      data: {
        actor: entry.actor,
        action: entry.action,
        target: entry.target,
        before: entry.before ?? undefined,
        after: entry.after ?? undefined,
      },
    });
  }

  /** Many entries in one statement, passed as one JSON array (a batch writes one per task). */
  async recordMany(entries: AuditEntry[], db: Db = this.prisma): Promise<void> {
    if (entries.length === 0) return;
    const rows = entries.map((e) => ({
      actor: e.actor,
      action: e.action,
      target: e.target,
      before: e.before ?? null,
      after: e.after ?? null,
    }));
    await db.$executeRaw`
      INSERT INTO audit_log (actor, action, target, before, after)
      SELECT actor, action, target, before, after FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS x(actor text, action text, target text, before jsonb, after jsonb)`;
  }

  /** Newest first: the entries of `namespace`, and with `withCluster` those of the cluster itself too. */
  list(
    filter: { actor?: string; action?: string; target?: string; namespace: string; withCluster: boolean },
    limit: number,
    beforeId?: bigint,
  ): Promise<AuditLog[]> {
    return this.prisma.auditLog.findMany({
      where: {
        OR: [{ namespace: filter.namespace }, ...(filter.withCluster ? [{ namespace: null }] : [])],
        actor: filter.actor,
        action: filter.action,
        target: filter.target,
        ...(beforeId !== undefined && { id: { lt: beforeId } }),
      },
      orderBy: { id: 'desc' },
      take: limit,
    });
  }
}
