import { slotOfExecutionId } from '@punctual/contract';
import { Prisma } from '../generated/prisma/client.js';

/**
 * `<alias>.id = ANY(ids)`, narrowed to the partitions of their slots when every id carries its slot
 * (see `executionIdFor`): `<alias>.scheduled_for = ANY(slots)` too, which Postgres prunes on when it
 * plans the statement. An id made before executions were partitioned carries none: then every
 * partition is looked in (the table as it was holds those rows).
 */
export function byIds(alias: string, ids: readonly string[]): Prisma.Sql {
  const a = Prisma.raw(alias);
  const slots = ids.map(slotOfExecutionId);
  if (slots.some((s) => s === null)) return Prisma.sql`${a}.id = ANY(${[...ids]}::uuid[])`;
  const distinct = [...new Set(slots.map((s) => s!.toISOString()))];
  return Prisma.sql`${a}.id = ANY(${[...ids]}::uuid[]) AND ${a}.scheduled_for = ANY(${distinct}::timestamptz[])`;
}

/** {@link byIds} for one id. */
export const byId = (alias: string, id: string) => byIds(alias, [id]);
