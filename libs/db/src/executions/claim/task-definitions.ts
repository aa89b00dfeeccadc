import type { Task } from '../../generated/prisma/client.js';
import { taskFromJson } from '../../tasks/task.row.js';

/**
 * How many task definitions a worker keeps. Sized for the active tasks of a large cluster (the
 * load and overhead benchmarks run 1,000 and 20,000): a definition parsed once per version serves
 * every run of the task after it, and a cache smaller than the tasks in rotation re-parses on every
 * run. About 1–2 KB each (more with large payloads).
 */
export const DEFINITIONS_KEPT = 50_000;

/** Freezes `value` and everything under it: a definition is shared by every run of its version. */
function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return Object.freeze(value);
}

/**
 * The task definitions a worker has parsed, by task id, at the version it saw: least recently used
 * first out. A claim tells Postgres which version it keeps, and gets the definition back only when
 * the task has moved on (or was never seen). Kept definitions are frozen — shared by every run of
 * the version, never copied per run — so a handler's `task` and `payload` are read-only.
 */
export class TaskDefinitions {
  private readonly kept = new Map<string, Task>();

  constructor(private readonly capacity = DEFINITIONS_KEPT) {}

  /** The version kept for `taskId` (0: none, as no task has version 0). */
  versionOf(taskId: string | undefined | null): number {
    return (taskId && this.kept.get(taskId)?.version) || 0;
  }

  /**
   * The definition of `taskId` at `version`: the one kept, or `json` parsed and kept. Null when
   * neither is there (the statement left the definition out for a version this cache no longer
   * holds: the caller reads it again).
   */
  resolve(taskId: string, version: number, json: string | null): Task | null {
    const kept = this.kept.get(taskId);
    if (kept && kept.version === version) {
      // Most recently used last: re-inserted at the end of the map's order.
      this.kept.delete(taskId);
      this.kept.set(taskId, kept);
      return kept;
    }
    if (json === null) return null;
    const task = deepFreeze(taskFromJson(json));
    this.kept.delete(taskId);
    this.kept.set(taskId, task);
    if (this.kept.size > this.capacity) this.kept.delete(this.kept.keys().next().value!);
    return task;
  }

  get size(): number {
    return this.kept.size;
  }
}
