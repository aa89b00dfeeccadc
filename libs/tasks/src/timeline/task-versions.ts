import { durationMs, TASK_DEFAULTS, type Task as TaskJson } from '@punctual/contract';
import type { CalendarChange, TaskChange } from '@punctual/db';
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
  /**
   * A piece of the span before it, cut where a calendar its definition excludes changed: the same
   * version of the task (and the change that began it), judged with the calendars as they were then.
   */
  continues?: true;
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
    // A task whose run limit is spent stays completed through an edit that leaves the limit at 0.
    const spent = definition.schedule.remainingRuns === 0 && definition.status === 'completed';
    const state =
      change.action === 'task.delete'
        ? 'deleted'
        : change.action === 'task.complete' || spent
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

/**
 * What the calendars named held over time, from their audit entries: each from each change on
 * (deleted: nothing), before its first change what that change found (nothing, if it created it),
 * and a calendar with no entries as it is now (`current`).
 */
export class CalendarHistory {
  private readonly byName = new Map<
    string,
    { at: number; calendar: CalendarSnapshot | null; before: CalendarSnapshot | null }[]
  >();

  constructor(
    changes: readonly CalendarChange[],
    private readonly current: ReadonlyMap<string, CalendarSnapshot>,
  ) {
    for (const change of changes) {
      const at = change.at.getTime();
      const list = this.byName.get(change.name) ?? [];
      list.push({ at, calendar: snapshotOf(change.after, at), before: snapshotOf(change.before, at) });
      this.byName.set(change.name, list);
    }
  }

  /** The calendars of `names` as they were at `at`, by name. */
  at(names: readonly string[], at: number): Map<string, CalendarSnapshot> {
    const found = new Map<string, CalendarSnapshot>();
    for (const name of names) {
      const calendar = this.of(name, at);
      if (calendar) found.set(name, calendar);
    }
    return found;
  }

  /** The instants in `(from, to)` at which a calendar of `names` changed, in order. */
  changesWithin(names: readonly string[], from: number, to: number): number[] {
    const instants = new Set<number>();
    for (const name of names)
      for (const change of this.byName.get(name) ?? []) if (change.at > from && change.at < to) instants.add(change.at);
    return [...instants].sort((a, b) => a - b);
  }

  private of(name: string, at: number): CalendarSnapshot | undefined {
    const list = this.byName.get(name);
    if (!list) return this.current.get(name);
    let last: (typeof list)[number] | undefined;
    for (const change of list) if (change.at <= at) last = change;
    return (last ? last.calendar : list[0]!.before) ?? undefined;
  }
}

/** A calendar as an audit entry keeps it, as the schedule reads it; null for none. */
function snapshotOf(value: unknown, at: number): CalendarSnapshot | null {
  if (typeof value !== 'object' || value === null) return null;
  const c = value as Partial<CalendarSnapshot> & { name?: string };
  if (typeof c.name !== 'string') return null;
  return {
    name: c.name,
    version: c.version ?? 0,
    updatedAt: new Date(at).toISOString(),
    timezone: c.timezone ?? null,
    dates: c.dates ?? [],
    rrules: c.rrules ?? [],
  };
}

/**
 * The spans judged with the calendars that applied at each time (DESIGN §7: the past is explained
 * as it was): each span's schedule takes its calendars as they were when it began, and a span is
 * cut where one of them changed — so a day removed from a calendar, or a calendar deleted, later
 * leaves the days it excluded then excluded on the timeline.
 */
export function withCalendarHistory(spans: readonly VersionSpan[], history: CalendarHistory): VersionSpan[] {
  const out: VersionSpan[] = [];
  for (const span of spans) {
    const names = span.definition.schedule.exclude ?? [];
    if (names.length === 0) {
      out.push(span);
      continue;
    }
    const starts = [span.from, ...history.changesWithin(names, span.from, span.to)];
    starts.forEach((from, i) => {
      const to = starts[i + 1] ?? span.to;
      // The span before a task existed shows what it would have run: with the calendars of its end.
      const judgedAt = Number.isFinite(from) ? from : Math.min(to, Date.now()) - 1;
      out.push({
        ...span,
        from,
        to,
        schedule: scheduledTaskOf(span.definition, history.at(names, judgedAt)),
        ...(i > 0 && { continues: true as const }),
      });
    });
  }
  return out;
}
