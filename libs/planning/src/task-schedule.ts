import { compileSchedule, type DstPolicy, type ExcludedDays, type Schedule, type ScheduleSpec } from '@punctual/time';

/**
 * A calendar as a task keeps a copy of it (`task.calendars`): what it held when the task was last
 * written or the calendar last edited — the edit rewrites every copy in its transaction.
 */
export interface CalendarSnapshot {
  name: string;
  version: number;
  /** When this version was written: with the name and version, what identifies the content. */
  updatedAt: string;
  /** Null: the task's own zone. */
  timezone: string | null;
  dates: string[];
  rrules: string[];
}

/** A task's schedule as it is stored: one of four kinds, with its bounds and DST choices. */
export interface ScheduledTask {
  name: string;
  scheduleKind: 'cron' | 'rrule' | 'at' | 'every';
  cron: string | null;
  rrule: string | null;
  runAt: Date | null;
  everyMs: bigint | null;
  timezone: string;
  startAt: Date | null;
  endAt: Date | null;
  dstGap: DstPolicy['gap'] | null;
  dstOverlap: DstPolicy['overlap'] | null;
  /** Where an rrule without DTSTART, and an `every` without `startAt`, count from. */
  createdAt: Date;
  /** The calendars it excludes (a JSON array of {@link CalendarSnapshot}). */
  calendars: unknown;
}

/** The time library's view of a task's schedule columns. */
export function scheduleSpecOf(task: ScheduledTask): ScheduleSpec {
  const bounds = { startAt: task.startAt, endAt: task.endAt, exclude: excludedDaysOf(task.calendars, task.timezone) };
  const dst = { gap: task.dstGap ?? undefined, overlap: task.dstOverlap ?? undefined };
  switch (task.scheduleKind) {
    case 'cron':
      return { kind: 'cron', cron: task.cron!, timezone: task.timezone, hashKey: task.name, dst, ...bounds };
    case 'rrule':
      return { kind: 'rrule', rrule: task.rrule!, timezone: task.timezone, anchor: task.createdAt, dst, ...bounds };
    case 'at':
      return { kind: 'at', runAt: task.runAt!, timezone: task.timezone, ...bounds };
    case 'every':
      return {
        kind: 'every',
        everyMs: Number(task.everyMs),
        anchor: task.startAt ?? task.createdAt,
        timezone: task.timezone,
        ...bounds,
      };
  }
}

/** The compiled schedule of a task (the time library memoises per expression, zone and policy). */
export function taskSchedule(task: ScheduledTask): Schedule {
  return compileSchedule(scheduleSpecOf(task));
}

/** The time library's view of a task's calendars: each in its own zone, else the task's. */
export function excludedDaysOf(calendars: unknown, taskZone: string): ExcludedDays[] {
  if (!Array.isArray(calendars)) return [];
  return (calendars as CalendarSnapshot[]).map((c) => ({
    key: `${c.name}@${c.version}@${c.updatedAt}`,
    timezone: c.timezone ?? taskZone,
    dates: c.dates,
    rrules: c.rrules,
  }));
}

/**
 * When a task's next success is overdue (DESIGN §8, `PunctualTaskNotRunning`): the slot after its
 * latest successful one (or its first slot, when none succeeded), plus `maxDelay` and `timeout` —
 * the latest a run of that slot may start and still be running. Null when it has no such slot.
 */
export function successDeadline(
  task: ScheduledTask & { maxDelayMs: number; timeoutMs: number },
  lastSuccessSlot: Date | null,
): Date | null {
  const next = taskSchedule(task).next(lastSuccessSlot ?? new Date(task.createdAt.getTime() - 1));
  return next && new Date(next.getTime() + task.maxDelayMs + task.timeoutMs);
}
