import type { Task } from '@punctual/db';
import { compileSchedule, type Schedule, type ScheduleSpec } from '@punctual/time';

/** The time library's view of a task's schedule columns. */
export function scheduleSpecOf(task: Task): ScheduleSpec {
  const bounds = { startAt: task.startAt, endAt: task.endAt };
  const dst = { gap: task.dstGap ?? undefined, overlap: task.dstOverlap ?? undefined };
  switch (task.scheduleKind) {
    case 'cron':
      return { kind: 'cron', cron: task.cron!, timezone: task.timezone, hashKey: task.name, dst, ...bounds };
    case 'rrule':
      return { kind: 'rrule', rrule: task.rrule!, timezone: task.timezone, anchor: task.createdAt, dst, ...bounds };
    case 'at':
      return { kind: 'at', runAt: task.runAt!, timezone: task.timezone, ...bounds };
    case 'every':
      return { kind: 'every', everyMs: Number(task.everyMs), anchor: task.startAt ?? task.createdAt, timezone: task.timezone, ...bounds };
  }
}

/** The compiled schedule of a task (the time library memoises per expression, zone and policy). */
export function taskSchedule(task: Task): Schedule {
  return compileSchedule(scheduleSpecOf(task));
}

