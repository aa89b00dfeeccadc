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
      data: { actor: entry.actor, action: entry.action, target: entry.target, before: entry.before ?? undefined, after: entry.after ?? undefined },
    });
  }

  /** Newest first, keyset-paginated on id. */
  list(filter: { actor?: string; action?: string; target?: string }, limit: number, beforeId?: bigint): Promise<AuditLog[]> {
    return this.prisma.auditLog.findMany({
      where: { actor: filter.actor, action: filter.action, target: filter.target, ...(beforeId !== undefined && { id: { lt: beforeId } }) },
      orderBy: { id: 'desc' },
      take: limit,
    });
  }
}
