import type { ApplyAction, FieldChange, Task as TaskJson } from '@punctual/contract';

/** The fields of a task that its spec decides: what an apply compares. Status, cursor and version are the scheduler's. */
export const SPEC_FIELDS = [
  'description',
  'handler',
  'payload',
  'secretFields',
  'schedule',
  'policy',
  'notify',
  'paused',
  'labels',
  'managedBy',
  'slo',
] as const;

/**
 * A task as an apply compares it: the task JSON of its spec fields, normalised (defaults filled in,
 * durations and instants written one way), with its payload as stored, secrets included.
 */
export type TaskState = Pick<TaskJson, 'name' | (typeof SPEC_FIELDS)[number]>;

export interface PlannedChange {
  name: string;
  action: ApplyAction;
  /** For an update: the fields that differ, secret ones without their values. */
  changes: FieldChange[];
}

export interface TaskDiff {
  /** The desired tasks in their order, then the tasks to delete by name. */
  items: PlannedChange[];
  /** Desired tasks that exist but are managed by nobody or by someone else: an apply must not touch them. */
  notManaged: { index: number; name: string; managedBy: string | null }[];
}

/**
 * What makes the items (tasks, calendars) `managedBy` manages what `desired` declares. `current`
 * holds the existing items that `desired` names and those `managedBy` manages. A desired item is
 * created when absent, updated when `changesOf` finds a field that differs and unchanged otherwise;
 * with `prune`, an item `managedBy` manages that `desired` does not name is deleted. An item managed
 * by anyone else is never in the plan: if `desired` names one it is reported in `notManaged` instead.
 */
export function diffManaged<T extends { name: string; managedBy: string | null }>(
  desired: T[],
  current: T[],
  options: { managedBy: string; prune: boolean },
  changesOf: (before: T, after: T) => FieldChange[],
): TaskDiff {
  const byName = new Map(current.map((item) => [item.name, item]));
  const declared = new Set(desired.map((item) => item.name));
  const items: PlannedChange[] = [];
  const notManaged: TaskDiff['notManaged'] = [];
  desired.forEach((item, index) => {
    const existing = byName.get(item.name);
    if (!existing) return items.push({ name: item.name, action: 'create', changes: [] });
    if (existing.managedBy !== options.managedBy)
      return notManaged.push({ index, name: item.name, managedBy: existing.managedBy });
    const changes = changesOf(existing, item);
    items.push({ name: item.name, action: changes.length ? 'update' : 'unchanged', changes });
  });
  if (options.prune) {
    const gone = current
      .filter((item) => item.managedBy === options.managedBy && !declared.has(item.name))
      .map((item) => item.name);
    for (const name of gone.sort()) items.push({ name, action: 'delete', changes: [] });
  }
  return { items, notManaged };
}

/** {@link diffManaged} of tasks, compared field by field ({@link fieldChanges}). */
export function diffTasks(
  desired: TaskState[],
  current: TaskState[],
  options: { managedBy: string; prune: boolean },
): TaskDiff {
  return diffManaged(desired, current, options, fieldChanges);
}

/**
 * The leaves of the spec fields that differ between `before` and `after`, by path. Arrays are
 * compared whole; object keys in any order are equal. A payload field named in either side's
 * `secretFields` (or holding one) is reported without its values.
 */
export function fieldChanges(before: TaskState, after: TaskState): FieldChange[] {
  const old = leaves(before);
  const now = leaves(after);
  const secretFields = [...before.secretFields, ...after.secretFields].map((field) => `payload.${field}`);
  const isSecret = (path: string) =>
    secretFields.some((field) => field === path || field.startsWith(`${path}.`) || path.startsWith(`${field}.`));
  const changes: FieldChange[] = [];
  for (const path of new Set([...now.keys(), ...old.keys()])) {
    const [b, a] = [old.get(path), now.get(path)];
    if (canonical(b) === canonical(a)) continue;
    const secret = isSecret(path);
    changes.push({
      field: path,
      ...(b !== undefined && { before: secret ? null : b }),
      ...(a !== undefined && { after: secret ? null : a }),
      secret,
    });
  }
  return changes;
}

/** Every leaf of the spec fields by its dotted path; arrays and empty objects are leaves. */
function leaves(task: TaskState): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const walk = (value: unknown, path: string) => {
    if (isPlainObject(value) && Object.keys(value).length > 0) {
      for (const [key, child] of Object.entries(value)) walk(child, `${path}.${key}`);
    } else if (value !== undefined) {
      out.set(path, value);
    }
  };
  for (const field of SPEC_FIELDS) {
    const value = task[field];
    // An empty payload or label set is no leaf: `{}` and absent are the same.
    if (isPlainObject(value) && Object.keys(value).length === 0) continue;
    walk(value, field);
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A value as text that is equal for equal JSON values, whatever the order of object keys. */
function canonical(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : isPlainObject(v)
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted(v[k])]),
          )
        : v;
  return value === undefined ? '' : JSON.stringify(sorted(value));
}
