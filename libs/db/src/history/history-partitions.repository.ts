import { Injectable } from '@nestjs/common';
import { partitionFor, type PartitionRange } from '@punctual/planning';
import { PrismaService } from '../prisma.service.js';

/**
 * A partition of `task_execution` and its twin of `execution_event` (same bounds, same suffix):
 * the slots in `[from, to)` (`from` null: from the beginning — the table as it was before
 * partitioning, `*_legacy`).
 */
export interface HistoryPartition extends PartitionRange {
  executions: string;
  events: string;
  legacy: boolean;
}

/** Rows and bytes of one table (all its partitions, indexes included). */
export interface TableSize {
  table: string;
  rows: number;
  bytes: number;
}

const PARTITION_NAME = /^(task_execution|execution_event)_(p\d{8}t\d{4}|legacy)$/;

/** A partition's name, quoted for SQL, after checking it is one of ours (names come from the catalog). */
export function partitionIdent(name: string): string {
  if (!PARTITION_NAME.test(name)) throw new Error(`not a partition of the history: ${name}`);
  return `"${name}"`;
}

/**
 * The partitions of the history tables (DESIGN §3 "History lifecycle"): which exist, making the
 * missing ones, dropping one whole. A partition is made standalone and attached (`punctual_create_
 * history_partition`), and dropped after a concurrent detach: neither ever takes a lock that stops
 * the statements on the table. The partitions known are cached per process; a cache that missed
 * one (another process made it) is refreshed on the next miss.
 */
@Injectable()
export class HistoryPartitionsRepository {
  private known: HistoryPartition[] | null = null;

  constructor(private readonly prisma: PrismaService) {}

  /** The partitions, oldest first (read from the catalog, and remembered). */
  async list(): Promise<HistoryPartition[]> {
    const rows = await this.prisma.$queryRaw<{ name: string; from_at: Date | null; to_at: Date }[]>`
      SELECT c.relname AS name,
        (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS from_at,
        (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz AS to_at
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'task_execution'::regclass
      ORDER BY from_at NULLS FIRST`;
    this.known = rows.map((r) => ({
      executions: r.name,
      events: r.name.replace(/^task_execution_/, 'execution_event_'),
      from: r.from_at,
      to: r.to_at,
      legacy: r.name === 'task_execution_legacy',
    }));
    return this.known;
  }

  /** Whether every instant of `slots` falls in a partition, as far as this process knows. */
  covers(slots: readonly Date[]): boolean {
    const known = this.known;
    if (!known) return false;
    return slots.every((slot) => known.some((p) => inRange(p, slot)));
  }

  /**
   * Makes a partition for every instant of `slots` that has none: `widthMs` wide, aligned, fitted
   * into the gap between the partitions around it. Safe when several processes do it at once (a
   * partition made meanwhile is taken as it is). Its own statements: call it outside a transaction.
   */
  async ensureCovered(slots: readonly Date[], widthMs: number): Promise<void> {
    if (slots.length === 0 || this.covers(slots)) return;
    let partitions = await this.list();
    for (const slot of [...slots].sort((a, b) => a.getTime() - b.getTime())) {
      if (partitions.some((p) => inRange(p, slot))) continue;
      const before = partitions.filter((p) => p.to.getTime() <= slot.getTime()).at(-1) ?? null;
      const after = partitions.find((p) => p.from !== null && p.from.getTime() > slot.getTime()) ?? null;
      const range = partitionFor(slot, widthMs, before?.to ?? null, after?.from ?? null);
      await this.create(range);
      partitions = await this.list();
    }
  }

  /** Makes the partitions ahead of now that the next `aheadMs` need (the leader, before they are due). */
  async ensureAhead(now: Date, aheadMs: number, widthMs: number): Promise<void> {
    const until = now.getTime() + aheadMs;
    const slots: Date[] = [];
    for (let at = now.getTime(); at <= until; at += Math.min(widthMs, aheadMs)) slots.push(new Date(at));
    slots.push(new Date(until));
    await this.ensureCovered(slots, widthMs);
  }

  private async create(range: PartitionRange): Promise<void> {
    try {
      await this.prisma.$transaction(async (tx) => {
        // Attaching takes SHARE UPDATE EXCLUSIVE on the tables, and a short lock on `task` (the
        // foreign key): never wait long for either behind a long transaction.
        await tx.$executeRaw`SET LOCAL lock_timeout = '5s'`;
        await tx.$queryRaw`SELECT punctual_create_history_partition(${range.from!.toISOString()}::timestamptz, ${range.to.toISOString()}::timestamptz)`;
      });
    } catch (error) {
      // Made by another process at the same moment: the next list shows it, and a real failure
      // shows again as a missing partition.
      const partitions = await this.list();
      if (!partitions.some((p) => inRange(p, range.from!))) throw error;
    }
  }

  /**
   * Drops a partition of each table: detached concurrently (it waits for the statements that may
   * still read it, and blocks none), then dropped — its disk given back at once. A detach left
   * half done (a process killed during it) is finished first.
   */
  async drop(partition: HistoryPartition): Promise<void> {
    for (const [parent, child] of [
      ['task_execution', partition.executions],
      ['execution_event', partition.events],
    ] as const) {
      const exists = await this.prisma.$queryRaw<{ attached: boolean; pending: boolean }[]>`
        SELECT true AS attached, i.inhdetachpending AS pending FROM pg_inherits i
        WHERE i.inhparent = ${parent}::regclass AND i.inhrelid = to_regclass(${child})`;
      if (exists[0]?.pending) {
        await this.prisma.$executeRawUnsafe(
          `ALTER TABLE "${parent}" DETACH PARTITION ${partitionIdent(child)} FINALIZE`,
        );
      } else if (exists[0]) {
        await this.prisma.$executeRawUnsafe(
          `ALTER TABLE "${parent}" DETACH PARTITION ${partitionIdent(child)} CONCURRENTLY`,
        );
      }
      await this.prisma.$executeRawUnsafe(`DROP TABLE IF EXISTS ${partitionIdent(child)}`);
    }
    await this.list();
  }

  /** Rows (the planner's estimate) and bytes of each history table and of the tables beside it. */
  async sizes(): Promise<TableSize[]> {
    const rows = await this.prisma.$queryRaw<{ table: string; rows: number; bytes: number }[]>`
      SELECT t.name AS table,
        COALESCE((SELECT sum(GREATEST(c.reltuples, 0))::float8 FROM pg_partition_tree(t.name::regclass) p JOIN pg_class c ON c.oid = p.relid WHERE p.isleaf), 0) AS rows,
        COALESCE((SELECT sum(pg_total_relation_size(p.relid))::float8 FROM pg_partition_tree(t.name::regclass) p WHERE p.isleaf), 0) AS bytes
      FROM unnest(ARRAY['task_execution', 'execution_event', 'outbox', 'audit_log', 'task_version', 'flow_start',
                        'quota_start', 'shard_leadership', 'overrun_permit']) AS t(name)`;
    return rows.map((r) => ({ table: r.table, rows: Number(r.rows), bytes: Number(r.bytes) }));
  }
}

function inRange(p: PartitionRange, slot: Date): boolean {
  return (p.from === null || p.from.getTime() <= slot.getTime()) && slot.getTime() < p.to.getTime();
}
