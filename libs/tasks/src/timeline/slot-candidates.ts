import type { SlotReason } from '@punctual/contract';
import { type CalendarSnapshot, excludedDaysOf, scheduleSpecOf, type ScheduledTask } from '@punctual/planning';
import { compileSchedule, type Schedule, type ScheduleSpec } from '@punctual/time';
import type { VersionSpan } from './task-versions.js';

/**
 * A slot a version of the task defines, or would have: `planned` when the schedule in force plans
 * it, else `notPlanned` says why not — the task did not exist yet, was deleted, its schedule had
 * ended, a calendar excluded the day, or the wall time fell in a DST gap or fold its policy drops.
 * `shifted`: a planned slot the DST policy moved out of a gap.
 */
export interface SlotCandidate {
  at: number;
  span: VersionSpan;
  planned: boolean;
  notPlanned?: { reason: SlotReason; calendar?: string };
  shifted?: boolean;
}

/** How far back a DST gap's moved slot can lie from where `shift` would put it. */
const GAP_REACH_MS = 3 * 3_600_000;

/** How long after an edit the slots of the version it replaced are listed (as `edited`) where the new one has none. */
const EDIT_REACH_MS = 86_400_000;

/** The schedule of the version an edit replaced (the span before `index`, when an edit began it and the task existed), or null. */
function replacedSchedule(spans: readonly VersionSpan[], index: number): Schedule | null {
  const span = spans[index]!;
  const before = spans[index - 1];
  if (
    !before ||
    span.continues ||
    (span.action !== 'task.update' && span.action !== 'task.replace' && span.action !== 'task.rollback') ||
    (before.state !== 'active' && before.state !== 'paused')
  )
    return null;
  return schedulesOf(before)?.actual ?? null;
}

/** The schedules a version's slots are judged by (see {@link candidatesOf}), compiled once per span. */
interface SpanSchedules {
  /** What the planner plans: bounds, calendars, DST policy. */
  actual: Schedule;
  /** `actual` with no calendars and no end, through gaps by shifting and both passes of a fold: every slot it could have. */
  all: Schedule;
  /** For DST schedules: `actual` and `all` with the gap's wall times skipped, to tell the slots a gap moved. */
  actualNoGap?: Schedule;
  allNoGap?: Schedule;
  /** Per calendar: `all` with only it excluded, to name the calendar that excluded a day. */
  byCalendar: { name: string; schedule: Schedule }[];
}

const compiledSpans = new WeakMap<VersionSpan, SpanSchedules | null>();

function schedulesOf(span: VersionSpan): SpanSchedules | null {
  let found = compiledSpans.get(span);
  if (found === undefined) {
    try {
      found = compileSpan(span.schedule);
    } catch {
      found = null; // a definition whose schedule cannot be computed has no slots (its lastError said why)
    }
    compiledSpans.set(span, found);
  }
  return found;
}

function compileSpan(task: ScheduledTask): SpanSchedules {
  const spec = scheduleSpecOf(task);
  const dstKind = spec.kind === 'cron' || spec.kind === 'rrule';
  const open = (s: ScheduleSpec, exclude: ScheduleSpec['exclude'], dst?: { gap: 'shift' | 'skip' }): ScheduleSpec => {
    const base = { ...s, endAt: null, exclude };
    return dst && (base.kind === 'cron' || base.kind === 'rrule')
      ? { ...base, dst: { ...(base.dst ?? {}), gap: dst.gap, overlap: 'both' } }
      : base;
  };
  const all = compileSchedule(open(spec, [], { gap: 'shift' }));
  const snapshots = Array.isArray(task.calendars) ? (task.calendars as CalendarSnapshot[]) : [];
  return {
    actual: compileSchedule(spec),
    all,
    actualNoGap: dstKind
      ? compileSchedule({ ...spec, dst: { ...((spec as { dst?: object }).dst ?? {}), gap: 'skip' } } as ScheduleSpec)
      : undefined,
    allNoGap: dstKind ? compileSchedule(open(spec, [], { gap: 'skip' })) : undefined,
    byCalendar: snapshots.map((c) => ({
      name: c.name,
      schedule: compileSchedule(open(spec, excludedDaysOf([c], task.timezone), { gap: 'shift' })),
    })),
  };
}

/** The slots of `schedule` in `(after, until]`, at most `limit`, as milliseconds. */
function slotsIn(schedule: Schedule, after: number, until: number, limit: number): number[] {
  const out: number[] = [];
  for (
    let slot = schedule.next(new Date(after));
    slot && slot.getTime() <= until && out.length < limit;
    slot = schedule.next(slot)
  )
    out.push(slot.getTime());
  return out;
}

/**
 * The first `limit` slots after `after` and at most `until` that the versions of the task define
 * or would have defined, oldest first, each judged by the version in force at its time. Returns
 * them with the instant up to which they are all there (`until`, unless the walk stopped at `limit`).
 */
export function candidatesOf(
  spans: readonly VersionSpan[],
  after: number,
  until: number,
  limit: number,
): { slots: SlotCandidate[]; through: number } {
  const slots: SlotCandidate[] = [];
  for (const [index, span] of spans.entries()) {
    if (span.to <= after + 1 || span.from > until) continue;
    const schedules = schedulesOf(span);
    if (!schedules) continue;
    const lo = Math.max(after, span.from - 1);
    const hi = Math.min(until, span.to - 1);
    const room = limit + 1 - slots.length;
    const all = slotsIn(schedules.all, lo, hi, room);
    const actual = slotsIn(schedules.actual, lo, hi, room);
    // An edit's first day: the slots the version it replaced would have run there.
    const replaced = replacedSchedule(spans, index);
    const inAll = new Set(all);
    const dropped = replaced
      ? slotsIn(replaced, lo, Math.min(hi, span.from + EDIT_REACH_MS), room).filter((t) => !inAll.has(t))
      : [];
    const inDropped = new Set(dropped);
    const times = [...new Set([...all, ...actual, ...dropped])].sort((a, b) => a - b).slice(0, room);
    if (times.length === 0) continue;
    const last = times[times.length - 1]!;
    const inActual = new Set(actual.filter((t) => t <= last));
    const inAllNoGap = schedules.allNoGap && new Set(slotsIn(schedules.allNoGap, lo, last, 4 * room));
    const inActualNoGap = schedules.actualNoGap && new Set(slotsIn(schedules.actualNoGap, lo, last, 4 * room + 64));
    const movedInActual = (t: number) =>
      inActualNoGap !== undefined && [...inActual].some((a) => a < t && a >= t - GAP_REACH_MS && !inActualNoGap.has(a));
    let excludedBy: Map<number, string> | undefined;
    const calendarOf = (t: number): string | undefined => {
      excludedBy ??= excludedTimes(schedules, lo, last, room);
      return excludedBy.get(t);
    };
    const endAt = span.schedule.endAt?.getTime() ?? Number.POSITIVE_INFINITY;
    for (const at of times) {
      if (inActual.has(at)) {
        slots.push({ at, span, planned: true, shifted: inActualNoGap !== undefined && !inActualNoGap.has(at) });
        continue;
      }
      if (inDropped.has(at)) slots.push({ at, span, planned: false, notPlanned: { reason: 'edited' } });
      else if (at > endAt) slots.push({ at, span, planned: false, notPlanned: { reason: 'after_end' } });
      else if (calendarOf(at) !== undefined)
        slots.push({ at, span, planned: false, notPlanned: { reason: 'calendar', calendar: calendarOf(at) } });
      else if (inAllNoGap && !inAllNoGap.has(at)) {
        // A wall time in a gap: planned moved (shift, end) — listed where it was planned — or dropped (skip).
        if (!movedInActual(at) && !inActual.has(at))
          slots.push({ at, span, planned: false, notPlanned: { reason: 'dst_gap' } });
      } else if (inAllNoGap) slots.push({ at, span, planned: false, notPlanned: { reason: 'dst_fold' } });
    }
    if (slots.length >= limit) return { slots: slots.slice(0, limit), through: slots[limit - 1]!.at };
    if (times.length === room) return { slots, through: last };
  }
  return { slots, through: until };
}

/** The slots of `(after, until]` each calendar excludes, by the name of the first that does. */
function excludedTimes(schedules: SpanSchedules, after: number, until: number, limit: number): Map<number, string> {
  const excluded = new Map<number, string>();
  if (schedules.byCalendar.length === 0) return excluded;
  const all = slotsIn(schedules.all, after, until, limit);
  for (const { name, schedule } of schedules.byCalendar) {
    const kept = new Set(slotsIn(schedule, after, until, limit));
    for (const t of all) if (!kept.has(t) && !excluded.has(t)) excluded.set(t, name);
  }
  return excluded;
}
