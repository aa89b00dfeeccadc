import { DEFAULT_NAMESPACE, type ErrorCode, splitQualifiedName } from '@punctual/contract';

/** What a request names — a task or a calendar by its name, an execution by its id — does not exist: answered 404. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  constructor(
    readonly what: 'task' | 'calendar' | 'execution' | 'version',
    readonly key: string,
  ) {
    super(
      what === 'execution'
        ? `no execution with id "${key}"`
        : what === 'version'
          ? `no version ${key}`
          : named(what, key),
    );
  }
}

/** A request that is well-formed but means something impossible; `field` is its path. */
export class InvalidTaskError extends Error {
  override readonly name = 'InvalidTaskError';
  constructor(
    readonly field: string,
    message: string,
    readonly code: ErrorCode = 'invalid_task',
  ) {
    super(message);
  }
}

/** A page's cursor that this API did not write (or that decodes to something it never wrote): answered 400. */
export class InvalidCursorError extends Error {
  override readonly name = 'InvalidCursorError';
  constructor() {
    super('cursor is not one this API returned');
  }
}

/** The execution is not in a state the operation applies to (e.g. retrying one that is not dead). */
export class ExecutionStateError extends Error {
  override readonly name = 'ExecutionStateError';
  constructor(
    readonly executionId: string,
    readonly status: string,
    action: string,
  ) {
    super(`execution ${executionId} is ${status}; only ${action}`);
  }
}

/** `If-Match` named a version the task no longer has. */
export class VersionConflictError extends Error {
  override readonly name = 'VersionConflictError';
  constructor(
    readonly taskName: string,
    readonly actual: number,
    readonly expected: number,
  ) {
    super(`task "${taskName}" is at version ${actual}, not ${expected}; fetch it again and retry`);
  }
}

/** A task payload over the size limit (64 KiB): answered 413. */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
}

/** Items of a batch that cannot be written (the whole batch is refused); fields carry the item index. */
export class InvalidBatchError extends Error {
  override readonly name = 'InvalidBatchError';
  constructor(readonly items: { field: string; message: string; code: ErrorCode; tooLarge?: boolean }[]) {
    super(items.map((i) => i.message).join('; '));
  }
}

/** An apply declares tasks that exist but are managed by nobody or by someone else: it touches none of them. */
export class TaskNotManagedError extends Error {
  override readonly name = 'TaskNotManagedError';
  constructor(
    readonly managedBy: string,
    readonly tasks: { index: number; name: string; managedBy: string | null; kind?: 'task' | 'calendar' }[],
  ) {
    super(tasks.map((t) => TaskNotManagedError.describe(t, managedBy)).join('; '));
  }

  /** `task "x" exists and is managed by nobody, not by "repo"` (or `calendar "x" …`). */
  static describe(
    task: { name: string; managedBy: string | null; kind?: 'task' | 'calendar' },
    managedBy: string,
  ): string {
    return `${task.kind ?? 'task'} "${task.name}" exists and is managed by ${task.managedBy === null ? 'nobody' : `"${task.managedBy}"`}, not by "${managedBy}"`;
  }

  /** The request field that declared it: `tasks[2].name`, `calendars[0].name`. */
  static field(task: { index: number; kind?: 'task' | 'calendar' }): string {
    return `${task.kind === 'calendar' ? 'calendars' : 'tasks'}[${task.index}].name`;
  }
}

/**
 * A PUT over a task or calendar that a manager owns (`managedBy`, set by `punctual apply`) and that
 * does not name that manager: it would take the resource from its manager, whose next apply fails.
 */
export class ManagedElsewhereError extends Error {
  override readonly name = 'ManagedElsewhereError';
  constructor(
    readonly kind: 'task' | 'calendar',
    readonly resource: string,
    readonly managedBy: string,
  ) {
    super(
      `${kind} "${resource}" is managed by "${managedBy}": change it where it is declared (punctual apply with that manager), or send "managedBy": "${managedBy}" to replace it all the same`,
    );
  }
}

/** A calendar some tasks still exclude cannot be deleted: answered 409, naming them. */
export class CalendarInUseError extends Error {
  override readonly name = 'CalendarInUseError';
  constructor(
    readonly calendarName: string,
    readonly tasks: string[],
  ) {
    const shown = tasks
      .slice(0, 5)
      .map((t) => `"${t}"`)
      .join(', ');
    super(
      `calendar "${calendarName}" is excluded by ${tasks.length} task(s) (${shown}${tasks.length > 5 ? ', …' : ''}): remove it from their schedule.exclude first`,
    );
  }
}

/** "no task named …", the namespace said when it is not the default one. */
function named(what: string, key: string): string {
  const { namespace, name } = splitQualifiedName(key);
  return `no ${what} named "${name}"${namespace === DEFAULT_NAMESPACE ? '' : ` in namespace "${namespace}"`}`;
}
