import { randomUUID } from 'node:crypto';
import type { TaskSpec } from '@punctual/contract';
import type { Calendar, Task } from '@punctual/db';
import { AmbiguousLocalTimeError, InvalidScheduleError } from '@punctual/time';
import { InvalidBatchError, InvalidTaskError, PayloadTooLargeError } from './errors.js';
import { newTaskSecret, type TaskDefinition, toTaskDefinition } from './task-definition.js';

export interface BatchItemResult {
  index: number;
  task: Task;
  created: boolean;
  secret?: string;
}

/** Refuses a batch that names an item twice: which of the two would win is not the caller's intent. `list` names the request's list. */
export function checkDistinctNames(specs: { name: string }[], list: 'tasks' | 'calendars' = 'tasks'): void {
  const first = new Map<string, number>();
  const errors: InvalidBatchError['items'] = specs.flatMap((spec, index) => {
    const seen = first.get(spec.name);
    if (seen === undefined) first.set(spec.name, index);
    return seen === undefined
      ? []
      : [
          {
            field: `${list}[${index}].name`,
            message: `${list}[${index}].name "${spec.name}" is also ${list}[${seen}]`,
            code: 'duplicate_name',
          },
        ];
  });
  if (errors.length) throw new InvalidBatchError(errors);
}

/** Every item an apply declares belongs to its manager: one naming another manager (or null: nobody) is refused, naming it. */
export function checkManager(
  specs: { managedBy?: string | null }[],
  managedBy: string,
  list: 'tasks' | 'calendars' = 'tasks',
): void {
  const errors: InvalidBatchError['items'] = specs.flatMap((spec, index) =>
    spec.managedBy === undefined || spec.managedBy === managedBy
      ? []
      : [
          {
            field: `${list}[${index}].managedBy`,
            message: `${list}[${index}].managedBy must be "${managedBy}", the apply's manager, or left out`,
            code: 'managed_by_mismatch',
          },
        ],
  );
  if (errors.length) throw new InvalidBatchError(errors);
}

/**
 * The definition of every spec of a batch (a replaced task keeps its anchor, as a single replace
 * does), or one error listing every item that is invalid, each field prefixed with its index.
 */
export function batchDefinitions(
  specs: TaskSpec[],
  existing: Map<string, Task>,
  now: Date,
  calendars: Calendar[] = [],
): TaskDefinition[] {
  const errors: InvalidBatchError['items'] = [];
  const definitions = specs.map((spec, index) => {
    const current = existing.get(spec.name);
    try {
      return toTaskDefinition(
        spec,
        now,
        current ? (current.startAt ?? current.createdAt) : now,
        current ?? null,
        calendars,
      );
    } catch (error) {
      errors.push(itemError(error, index));
      return null;
    }
  });
  if (errors.length) throw new InvalidBatchError(errors);
  return definitions as TaskDefinition[];
}

function itemError(error: unknown, index: number): InvalidBatchError['items'][number] {
  const prefix = (field: string) => `tasks[${index}].${field}`;
  if (error instanceof InvalidTaskError)
    return { field: prefix(error.field), message: `${prefix(error.field)}: ${error.message}`, code: error.code };
  if (error instanceof InvalidScheduleError)
    return {
      field: prefix(error.field),
      message: `${prefix(error.field)}: ${error.message}`,
      code: 'invalid_schedule',
    };
  if (error instanceof AmbiguousLocalTimeError)
    return {
      field: prefix(error.field),
      message: `${prefix(error.field)}: ${error.message}`,
      code: 'ambiguous_local_time',
    };
  if (error instanceof PayloadTooLargeError)
    return {
      field: prefix('payload'),
      message: `${prefix('payload')}: ${error.message}`,
      code: 'payload_too_large',
      tooLarge: true,
    };
  throw error;
}

/**
 * The whole row of a task created from `definition` now: the definition sets every column but the
 * bookkeeping ones, which get what the database's defaults would give them.
 */
export function newTaskRow(definition: TaskDefinition, now: Date): Task {
  return {
    ...definition,
    id: randomUUID(),
    secret: newTaskSecret(),
    lastScheduledFor: null,
    missedCount: 0n,
    version: 1,
    planVersion: 1,
    lastError: null,
    lastErrorAt: null,
    createdAt: now,
    updatedAt: now,
  } as Task;
}
