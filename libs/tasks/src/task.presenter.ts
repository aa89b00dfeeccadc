import {
  bareName,
  type Execution,
  type ExecutionEvent as ExecutionEventJson,
  formatDuration,
  redactPayload,
  type Task as TaskJson,
  type TaskHealth,
} from '@punctual/contract';
import type { ExecutionHistoryEvent, Task, TaskExecution, TaskHealthRow } from '@punctual/db';

/** A task's definition and state as the API shows them, all but its health (read from its executions). */
export type TaskDefinitionJson = Omit<TaskJson, 'health'>;

/**
 * The task JSON of DESIGN §7 with its health and its next run (see TaskViews: the first slot its
 * `upcoming` lists). The secret is never part of it (it is shown once, on create).
 */
export function presentTask(task: Task, health: TaskHealthRow | undefined, nextRunAt: string | null): TaskJson {
  const shown = presentHealth(health);
  return {
    ...withBareNames(presentDefinition(task)),
    nextRunAt,
    health: task.status === 'paused' && task.pauseNote ? { ...shown, pauseNote: task.pauseNote } : shown,
  };
}

/** A task's health as the API shows it; a task just written has no row read yet: `never_ran` or its status. */
export function presentHealth(health: TaskHealthRow | undefined): TaskHealth {
  return {
    state: health?.state ?? 'never_ran',
    lastSuccessAt: health?.lastSuccessAt?.toISOString() ?? null,
    lastSlotAt: health?.lastSlotAt?.toISOString() ?? null,
    consecutiveFailures: health?.consecutiveFailures ?? 0,
  };
}

/**
 * A definition as its namespace sees it: the task's (or calendar's) name and the calendars a task
 * excludes without the namespace their keys carry (see `qualifiedName`). Also what the audit log
 * shows of a stored definition: a calendar's has no schedule.
 */
export function withBareNames<T extends { name: string; schedule?: { exclude?: string[] } }>(definition: T): T {
  const exclude = definition.schedule?.exclude;
  return {
    ...definition,
    name: bareName(definition.name),
    ...(exclude && { schedule: { ...definition.schedule, exclude: exclude.map(bareName) } }),
  };
}

/**
 * The task JSON without its health: what the audit log keeps and what a patch or an apply compares.
 * Names are keys here (`team-a/nightly`), as stored; {@link presentTask} shows them bare.
 */
export function presentDefinition(task: Task): TaskDefinitionJson {
  const schedule: Partial<Pick<TaskJson['schedule'], 'cron' | 'rrule' | 'at' | 'every'>> = {};
  if (task.scheduleKind === 'cron') schedule.cron = task.cron!;
  if (task.scheduleKind === 'rrule') schedule.rrule = task.rrule!;
  if (task.scheduleKind === 'at') schedule.at = task.runAt?.toISOString();
  if (task.scheduleKind === 'every') schedule.every = formatDuration(Number(task.everyMs));
  return {
    name: task.name,
    namespace: task.namespace,
    description: task.description,
    handler: task.handler,
    payload: redactPayload(task.payload, task.secretFields),
    secretFields: task.secretFields,
    schedule: {
      ...schedule,
      timezone: task.timezone,
      startAt: task.startAt?.toISOString() ?? null,
      endAt: task.endAt?.toISOString() ?? null,
      remainingRuns: task.remainingRuns,
      jitter: formatDuration(task.jitterMs),
      ...(task.dstGap || task.dstOverlap
        ? { dst: { gap: task.dstGap ?? undefined, overlap: task.dstOverlap ?? undefined } }
        : {}),
      ...(task.exclude.length > 0 ? { exclude: task.exclude } : {}),
    },
    policy: {
      overlap: task.overlap,
      misfire: task.misfire,
      maxDelay: formatDuration(task.maxDelayMs),
      retry: {
        attempts: task.maxAttempts,
        backoff: formatDuration(task.backoffMs),
        maxBackoff: formatDuration(task.backoffMaxMs),
      },
      timeout: formatDuration(task.timeoutMs),
      concurrency: task.concurrencyKey === null ? null : { key: task.concurrencyKey, limit: task.concurrencyLimit! },
      rateLimit:
        task.rateKey === null
          ? null
          : { key: task.rateKey, limit: task.rateLimit!, per: formatDuration(task.ratePerMs!) },
      pauseAfter:
        task.pauseAfterFailures === null
          ? null
          : { failures: task.pauseAfterFailures, within: formatDuration(task.pauseAfterWithinMs!) },
    },
    notify: { url: task.notifyUrl, on: task.notifyOn },
    paused: task.status === 'paused',
    pauseNote: task.status === 'paused' ? task.pauseNote : null,
    labels: task.labels as Record<string, string>,
    managedBy: task.managedBy,
    slo: task.sloStartWithinMs === null ? null : { startWithin: formatDuration(task.sloStartWithinMs) },
    status: task.status,
    // The definition alone knows only the cursor; TaskViews shows the next run itself.
    nextRunAt: task.status === 'active' ? (task.nextRunAt?.toISOString() ?? null) : null,
    planCursor: task.nextRunAt?.toISOString() ?? null,
    lastScheduledFor: task.lastScheduledFor?.toISOString() ?? null,
    missedCount: Number(task.missedCount),
    /** Why the planner could not compute the task's slots (it tries again every minute), or null. */
    lastError: task.lastError,
    lastErrorAt: task.lastErrorAt?.toISOString() ?? null,
    version: task.version,
    createdAt: task.createdAt.toISOString(),
    updatedAt: task.updatedAt.toISOString(),
  };
}

/** The execution JSON of DESIGN §7. */
export function presentExecution(execution: TaskExecution): Execution {
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    id: execution.id,
    task: bareName(execution.taskName),
    taskDeleted: execution.taskId === null,
    scheduledFor: execution.scheduledFor.toISOString(),
    fireAt: execution.fireAt.toISOString(),
    trigger: execution.trigger,
    status: execution.status,
    skipReason: execution.skipReason,
    attempt: execution.attempt,
    workerId: execution.workerId,
    queuedAt: iso(execution.queuedAt),
    startedAt: iso(execution.startedAt),
    finishedAt: iso(execution.finishedAt),
    durationMs:
      execution.startedAt && execution.finishedAt
        ? execution.finishedAt.getTime() - execution.startedAt.getTime()
        : null,
    nextAttemptAt: iso(execution.nextAttemptAt),
    error: execution.error,
    result: execution.result,
  };
}

export function presentEvent(event: ExecutionHistoryEvent): ExecutionEventJson {
  return {
    from: event.fromStatus,
    to: event.toStatus,
    at: event.at.toISOString(),
    workerId: event.workerId,
    detail: event.detail,
  };
}
