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
      return { kind: 'rrule', rrule: task.rrule!, timezone: task.timezone, dst, ...bounds };
    case 'at':
      return { kind: 'at', runAt: task.runAt!, ...bounds };
    case 'every':
      return { kind: 'every', everyMs: Number(task.everyMs), anchor: task.startAt ?? task.createdAt, ...bounds };
  }
}

const compiled = new Map<string, Schedule>();
const CACHE_LIMIT = 100_000;

/** The compiled schedule of a task, memoised per task version (a change to the schedule bumps it). */
export function taskSchedule(task: Task): Schedule {
  const key = `${task.id}:${task.version}`;
  let schedule = compiled.get(key);
  if (!schedule) {
    if (compiled.size >= CACHE_LIMIT) compiled.clear();
    schedule = compileSchedule(scheduleSpecOf(task));
    compiled.set(key, schedule);
  }
  return schedule;
}
