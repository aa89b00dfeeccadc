import type { PreviewRequest, ScheduleSpec, Task } from '@punctual/contract';

type Schedule = Task['schedule'];

/**
 * The schedule `POST /v1/schedules/preview` is asked for to find a task's excluded fire times: the
 * task's own, as a {@link ScheduleSpec}, without `exclude`. Nulls the spec does not take are left
 * out, and so is `jitter` (it delays runs, it does not move slots).
 */
export function unexcludedSchedule(schedule: Schedule): ScheduleSpec {
  const spec: ScheduleSpec = { timezone: schedule.timezone };
  if (schedule.cron !== undefined) spec.cron = schedule.cron;
  if (schedule.rrule !== undefined) spec.rrule = schedule.rrule;
  if (schedule.at !== undefined) spec.at = schedule.at;
  if (schedule.every !== undefined) spec.every = schedule.every;
  if (schedule.startAt) spec.startAt = schedule.startAt;
  if (schedule.endAt) spec.endAt = schedule.endAt;
  if (schedule.dst) {
    const dst: NonNullable<ScheduleSpec['dst']> = {};
    if (schedule.dst.gap !== undefined) dst.gap = schedule.dst.gap;
    if (schedule.dst.overlap !== undefined) dst.overlap = schedule.dst.overlap;
    spec.dst = dst;
  }
  return spec;
}

/**
 * The preview request whose answer holds the task's fire times as if it excluded no day, from its
 * first upcoming one on (an `every` schedule without `startAt` counts from `from`: its first real
 * fire time keeps the two in step). Null when there is nothing to compare: no excluded calendar,
 * no upcoming fire time, or a one-off (`at`), which has a single fire time or none.
 */
export function unexcludedPreview(
  task: Pick<Task, 'schedule'> & { upcoming: readonly string[] },
  count: number,
): PreviewRequest | null {
  const first = task.upcoming[0];
  const s = task.schedule;
  if (!first || !s.exclude?.length || s.at !== undefined) return null;
  if (s.endAt && Date.parse(s.endAt) <= Date.parse(first)) return null;
  return { schedule: unexcludedSchedule(s), from: first, count };
}

/** One fire time of the list: a real one, or one the excluded days leave out. */
export interface MergedFireTime {
  at: string;
  excluded: boolean;
}

/**
 * The real fire times `upcoming` (excluded days left out) with, in order among them, the times of
 * `unexcluded` (the same schedule without its exclusions, from `upcoming[0]` on) that are not among
 * them: those are the ones the excluded days leave out. Only up to the last real fire time, unless
 * `upcoming` holds all the task has left (`complete`). When the two disagree — a real fire time
 * within the span of `unexcluded` missing from it, so it is not the same schedule (`H` hashed by
 * another name, an RRULE counted from another start) — nothing is marked excluded.
 */
export function mergeExcluded(
  upcoming: readonly string[],
  unexcluded: readonly string[],
  complete = false,
): MergedFireTime[] {
  const real = upcoming.map((at) => ({ at, excluded: false }));
  if (upcoming.length === 0 || unexcluded.length === 0) return real;
  const realMs = new Set(upcoming.map((at) => Date.parse(at)));
  const previewMs = new Set(unexcluded.map((at) => Date.parse(at)));
  const previewEnd = Math.max(...previewMs);
  for (const ms of realMs) if (ms <= previewEnd && !previewMs.has(ms)) return real;
  const first = Date.parse(upcoming[0]!);
  const last = complete ? Infinity : Date.parse(upcoming[upcoming.length - 1]!);
  const excluded = unexcluded
    .filter((at) => {
      const ms = Date.parse(at);
      return !realMs.has(ms) && ms > first && ms < last;
    })
    .map((at) => ({ at, excluded: true }));
  return [...real, ...excluded].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}
