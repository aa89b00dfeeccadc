import { Prisma, type Task } from '../generated/prisma/client.js';

// A task's row as statements written by hand read and write it: its columns, and the task a row
// (or its `to_jsonb`) carries.

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
export const WRITTEN_FIELDS = TASK_FIELDS.filter(([field]) => field !== 'namespace');

/**
 * The select list of a task's columns under `alias`, each renamed `<prefix><column>`, for statements
 * that read a task beside other rows (see {@link taskFromColumns}).
 */
export function taskColumns(alias: string, prefix: string): string {
  return TASK_FIELDS.map(([, column]) => `${alias}.${column} AS "${prefix}${column}"`).join(', ');
}

/** The task a row read with {@link taskColumns} carries; null when its id is null (no task). */
export function taskFromColumns(row: Record<string, unknown>, prefix: string): Task | null {
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
export function jsonValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  return value;
}
