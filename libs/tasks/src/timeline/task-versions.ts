import { durationMs, TASK_DEFAULTS, type Task as TaskJson } from '@punctual/contract';
import type { TaskChange } from '@punctual/db';
import type { CalendarSnapshot, ScheduledTask } from '@punctual/planning';

/** A task's definition as the audit log keeps it (the task JSON without its health). */
export type DefinitionJson = Omit<TaskJson, 'health'>;

/**
 * What a task's name stood for over a span of time `[from, to)`: not created yet (`absent`, the
 * first definition's schedule shows what it would have run), `active`, `paused`, `deleted` (the
 * last definition's schedule shows what it no longer runs), or `completed` (its run limit spent:
 * from just after the last slot planned). `changedBy` and `at` name the change that began the span.
 */
export interface VersionSpan {
  from: number;
  to: number;
  state: 'absent' | 'active' | 'paused' | 'deleted' | 'completed';
  definition: DefinitionJson;
  schedule: ScheduledTask;
  changedBy: string | null;
  action: string | null;
  at: Date | null;
}

const OPENING = new Set([
  'task.create',
  'task.update',
  'task.replace',
  'task.resume',
  'task.pause',
  'task.rollback',
  'task.restore',
]);

/**
 * The spans of a name's history, from its audit entries (oldest first). `calendars` are the copies
 * of the calendars the definitions exclude, by name (the task's own, else the calendars table):
 * the audit keeps a definition's calendar names, not their days.
 */
export function versionSpans(
  changes: readonly TaskChange[],
  calendars: ReadonlyMap<string, CalendarSnapshot>,
): VersionSpan[] {
  const spans: VersionSpan[] = [];
  let last: DefinitionJson | null = null;
  for (const change of changes) {
    const definition = (change.after as DefinitionJson | null) ?? last;
    if (!definition) continue;
    // A completion begins after the last slot its run limit planned (which may lie before or after the entry).
    const at =
      change.action === 'task.complete' && definition.lastScheduledFor
        ? Date.parse(definition.lastScheduledFor) + 1
        : change.at.getTime();
    const state =
      change.action === 'task.delete'
        ? 'deleted'
        : change.action === 'task.complete'
          ? 'completed'
          : definition.paused
            ? 'paused'
            : OPENING.has(change.action)
              ? 'active'
              : null;
    if (!state) continue;
    if (spans.length === 0) spans.push(span(Number.NEGATIVE_INFINITY, 'absent', definition, calendars, null));
    const previous = spans[spans.length - 1]!;
    if (state === 'completed' && at <= previous.from) continue;
    previous.to = at;
    spans.push(span(at, state, definition, calendars, change));
    if (change.after) last = change.after as DefinitionJson;
  }
  return spans.filter((s) => s.to > s.from);
}

/** The spans of a task with no audit entries (written before its name was audited): as it is now, since its creation. */
export function currentSpans(
  definition: DefinitionJson,
  calendars: ReadonlyMap<string, CalendarSnapshot>,
): VersionSpan[] {
  const created = Date.parse(definition.createdAt);
  return [
    { ...span(Number.NEGATIVE_INFINITY, 'absent', definition, calendars, null), to: created },
    span(created, definition.paused ? 'paused' : 'active', definition, calendars, null),
  ];
}

function span(
  from: number,
  state: VersionSpan['state'],
  definition: DefinitionJson,
  calendars: ReadonlyMap<string, CalendarSnapshot>,
  change: TaskChange | null,
): VersionSpan {
  return {
    from,
    to: Number.POSITIVE_INFINITY,
    state,
    definition,
    schedule: scheduledTaskOf(definition, calendars),
    changedBy: change?.actor ?? null,
    action: change?.action ?? null,
    at: change?.at ?? null,
  };
}

/** The schedule columns of a definition as the audit log keeps it: what the planner computes slots from. */
export function scheduledTaskOf(
  definition: DefinitionJson,
  calendars: ReadonlyMap<string, CalendarSnapshot>,
): ScheduledTask {
  const s = definition.schedule;
  const instant = (value: string | null | undefined) => (value ? new Date(value) : null);
  return {
    name: definition.name,
    scheduleKind: s.cron !== undefined ? 'cron' : s.rrule !== undefined ? 'rrule' : s.at !== undefined ? 'at' : 'every',
    cron: s.cron ?? null,
    rrule: s.rrule ?? null,
    runAt: instant(s.at),
    everyMs: s.every !== undefined ? BigInt(durationMs(s.every)) : null,
    timezone: s.timezone ?? TASK_DEFAULTS.timezone,
    startAt: instant(s.startAt),
    endAt: instant(s.endAt),
    dstGap: s.dst?.gap ?? null,
    dstOverlap: s.dst?.overlap ?? null,
    createdAt: new Date(definition.createdAt),
    calendars: (s.exclude ?? [])
      .map((name) => calendars.get(name))
      .filter((c): c is CalendarSnapshot => c !== undefined),
  };
}

/** The span in force at `at`. */
export function spanAt(spans: readonly VersionSpan[], at: number): VersionSpan | undefined {
  let lo = 0;
  let hi = spans.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = spans[mid]!;
    if (at < s.from) hi = mid - 1;
    else if (at >= s.to) lo = mid + 1;
    else return s;
  }
  return undefined;
}
