import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { ClockService } from '@punctual/clock';
import {
  formatDuration,
  splitQualifiedName,
  TASK_DEFAULTS,
  type TimelineItem,
  type TimelinePage,
  type TimelineQuery,
} from '@punctual/contract';
import {
  ApiKeysRepository,
  CalendarsRepository,
  HistoryRetention,
  SchedulerStateRepository,
  type SlotEvent,
  type SlotRow,
  TasksRepository,
  TimelineRepository,
  unledPeriods,
} from '@punctual/db';
import { type CalendarSnapshot, shardOf } from '@punctual/planning';
import { formatLocal } from '@punctual/time';
import type { z } from 'zod';
import { InvalidCursorError, NotFoundError } from '../errors.js';
import { decodeCursor, encodeCursor } from '../page-cursor.js';
import { presentDefinition } from '../task.presenter.js';
import { candidatesOf, type SlotCandidate } from './slot-candidates.js';
import { type ExplainContext, explainSlot } from './slot-explanation.js';
import { CalendarHistory, currentSpans, type VersionSpan, versionSpans, withCalendarHistory } from './task-versions.js';

const DAY_MS = 86_400_000;
/** A due slot with no execution yet, this close to now, is being planned (the planner's lookahead and tick), not lost. */
const PLANNING_GRACE_MS = 30_000;
/** How far past a missed slot a catch-up run that superseded it is looked for (one that records what it covers says so exactly). */
const CATCH_UP_REACH_MS = 32 * DAY_MS;
/** A leader's heartbeat (its repair pass) comes every 2 s: two of them may be missed before a shard counts as unled. */
const HEARTBEAT_GRACE_MS = 4_000;

/**
 * A task's timeline (DESIGN §7): every slot its schedule defines in a range — by the versions of
 * the task in force at each time, read from the audit log — merged with its executions, each with
 * one outcome, a reason code and a sentence naming the cause. A page costs the schedule math of
 * its slots and a handful of index-range reads, whatever the task's history holds.
 */
@Injectable()
export class TimelineService {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly timeline: TimelineRepository,
    private readonly calendars: CalendarsRepository,
    private readonly schedulers: SchedulerStateRepository,
    private readonly clock: ClockService,
    private readonly apiKeys: ApiKeysRepository,
    @Inject(CONFIG) private readonly config: Config,
    private readonly retention: HistoryRetention,
  ) {}

  /**
   * One page of the timeline of the task named `name` (a deleted one's too). `offered`: the handlers
   * live workers offer, or null when unknown. `viewer`: the namespaces the asking key may see (null:
   * the whole cluster) — it is told the names of keys within them only.
   */
  async page(
    name: string,
    query: z.output<typeof TimelineQuery>,
    offered: () => Promise<ReadonlySet<string> | null>,
    viewer: readonly string[] | null = null,
  ): Promise<TimelinePage> {
    const now = this.clock.now();
    const namespace = splitQualifiedName(name).namespace;
    const [task, changes, kept] = await Promise.all([
      this.tasks.findByName(name),
      this.timeline.changesOf(name),
      this.retention.historyMsOf(namespace),
    ]);
    const calendars = await this.calendarSnapshots(namespace, task?.calendars);
    const asDefined =
      changes.length > 0
        ? versionSpans(changes, calendars)
        : task
          ? currentSpans(presentDefinition(task), calendars)
          : [];
    // Each span judged with its calendars as they were then, not as they are now.
    const excluded = [...new Set(asDefined.flatMap((s) => s.definition.schedule.exclude ?? []))];
    const spans = withCalendarHistory(
      asDefined,
      new CalendarHistory(await this.timeline.calendarChangesOf(excluded), calendars),
    );
    if (spans.length === 0) {
      const rows = await this.timeline.rowsOf(name, null, new Date(0), new Date(8.64e15), 1);
      if (rows.length === 0) throw new NotFoundError('task', name);
    }
    const { from, to } = rangeOf(query, now, Math.max(now - kept, existedFrom(spans)));
    const after = query.cursor ? cursorTime(query.cursor, from, to) : from - 1;
    const timezone = task?.timezone ?? spans[spans.length - 1]?.schedule.timezone ?? TASK_DEFAULTS.timezone;

    const { slots, through } = candidatesOf(spans, after, to, query.limit);
    const rows = await this.timeline.rowsOf(
      name,
      task?.id ?? null,
      new Date(after),
      new Date(through),
      query.limit + 1,
    );
    const cut = rows.length > query.limit ? Math.min(through, rows[query.limit - 1]!.scheduledFor.getTime()) : through;
    const items = merge(slots, rows, task?.id ?? null).filter((i) => i.at <= cut);
    const page = items.slice(0, query.limit);
    const more = items.length > query.limit || cut < to;
    const last = page.length === query.limit ? page[page.length - 1]!.at : cut;

    const ctx = await this.context(name, task, page, spans, timezone, from, to, now, kept, offered, viewer);
    return {
      task: name,
      timezone,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      items: page.map((i) => present(i, explainSlot(i.at, i.row, i.candidate, ctx), timezone)),
      nextCursor: more && last < to ? encodeCursor({ t: String(last) }) : null,
    };
  }

  /** What explains this page's slots: each read only when a slot on it needs it. */
  private async context(
    name: string,
    task: { id: string } | null,
    page: MergedSlot[],
    spans: VersionSpan[],
    timezone: string,
    from: number,
    to: number,
    now: number,
    kept: number,
    offered: () => Promise<ReadonlySet<string> | null>,
    viewer: readonly string[] | null,
  ): Promise<ExplainContext> {
    const rows = page.flatMap((i) => (i.row ? [i.row] : []));
    const taskId = task?.id ?? null;
    const explained = rows.filter((r) => r.attempt > 1 || r.status === 'dead' || r.status === 'cancelled');
    const waiting = rows.some((r) => (r.status === 'scheduled' || r.status === 'queued') && r.fireAt.getTime() <= now);
    const [events, keys, unled, live] = await Promise.all([
      this.timeline.eventsOf(explained.map((r) => r.id)),
      this.apiKeys.list(),
      this.unledPeriods(taskId, from, Math.min(to, now)),
      waiting ? offered().catch(() => null) : Promise.resolve(null),
    ]);

    const overlapped = new Map<string, SlotRow | null>();
    let lastStarted: SlotRow | null | undefined;
    for (const row of rows) {
      if (row.status === 'skipped' && row.skipReason === 'overlap') {
        lastStarted ??= await this.timeline.lastStartedAtOrBefore(name, taskId, row.scheduledFor);
        overlapped.set(row.id, lastStarted);
      }
      if (row.startedAt) lastStarted = row;
    }

    // Catch-up runs and later missed slots, read forward from the first slot that needs them.
    const catchUps: SlotRow[] = [];
    const missed = rows.filter((r) => r.status === 'missed').map((r) => r.scheduledFor.getTime());
    // The first missed row of a planner's pass records the late slots before it, only counted, that
    // it stands for: they stay explained when a backfill has run that row since.
    const standsFor = rows.filter((r) => r.coversFrom !== null && r.trigger !== 'catchup');
    let noneFrom = Number.POSITIVE_INFINITY;
    const firstFrom = (at: number) => catchUps.find((c) => c.scheduledFor.getTime() >= at) ?? null;
    // Only the first catch-up at or after a slot can have stood in for it, and only when it covers
    // it (a later one began after it); one written before coverage was recorded, within the reach.
    const catchUpOf = (at: number) => {
      const c = firstFrom(at);
      return c && (c.coversFrom === null || c.coversFrom.getTime() <= at) ? c : null;
    };
    const needsCatchUp = page.filter((i) =>
      i.row ? i.row.status === 'missed' : i.candidate?.planned && i.at <= now - PLANNING_GRACE_MS,
    );
    for (const item of needsCatchUp) {
      if (firstFrom(item.at) || item.at >= noneFrom) continue;
      const found = await this.timeline.firstCatchUpFrom(
        name,
        taskId,
        new Date(item.at),
        new Date(item.at + CATCH_UP_REACH_MS),
      );
      if (found) catchUps.push(found);
      else noneFrom = item.at;
    }
    return {
      now,
      timezone,
      spans,
      unled,
      shard: task ? shardOf(task.id, await this.shardCount()) : 0,
      planningGraceMs: PLANNING_GRACE_MS,
      keptFrom: now - kept,
      retention: formatDuration(kept),
      events: groupBy(events),
      overlapped,
      catchUpOf,
      missedAfter: (at) =>
        missed.some((m) => m > at) ||
        standsFor.some((r) => r.scheduledFor.getTime() > at && r.coversFrom!.getTime() <= at),
      offered: live,
      who: (actor) => {
        const key = keys.find((k) => k.prefix === actor);
        if (!key) return `key ${actor}`;
        // A scoped viewer sees the names of keys scoped within its own namespaces only.
        const seen = viewer === null || (key.namespaces.length > 0 && key.namespaces.every((n) => viewer.includes(n)));
        return seen ? `key ${key.name}` : "a key outside this key's namespaces";
      },
    };
  }

  /** When no scheduler led the task's shard within `[from, to]`, counted from the shard's first recorded leadership. */
  private async unledPeriods(taskId: string | null, from: number, to: number): Promise<{ from: Date; to: Date }[]> {
    if (taskId === null || to <= from) return [];
    const shard = shardOf(taskId, await this.shardCount());
    const leaderships = await this.schedulers.leaderships(shard, new Date(from - DAY_MS), new Date(to));
    const first = leaderships[0]?.from.getTime();
    if (first === undefined) return [];
    // A leader beats every 2 s (its repair pass) and holds its lock for LEADER_TTL_MS: only a longer silence is a time unled.
    return unledPeriods(
      leaderships,
      new Date(Math.max(from, first)),
      new Date(to),
      Math.max(2 * this.config.leaderTtlMs, HEARTBEAT_GRACE_MS),
    );
  }

  private shardCountMemo: Promise<number> | null = null;
  private shardCount(): Promise<number> {
    this.shardCountMemo ??= this.schedulers.shards().then(
      (s) => Math.max(1, s.length),
      () => 1,
    );
    return this.shardCountMemo;
  }

  /** The calendars the task's definitions may exclude: its own copies first, the calendars table for the rest. */
  private async calendarSnapshots(namespace: string, own: unknown): Promise<Map<string, CalendarSnapshot>> {
    const snapshots = new Map<string, CalendarSnapshot>();
    for (const c of await this.calendars.list(namespace)) {
      snapshots.set(c.name, {
        name: c.name,
        version: c.version,
        updatedAt: c.updatedAt.toISOString(),
        timezone: c.timezone,
        dates: c.dates,
        rrules: c.rrules,
      });
    }
    if (Array.isArray(own)) for (const c of own as CalendarSnapshot[]) snapshots.set(c.name, c);
    return snapshots;
  }
}

/** A slot of the page: the schedule's (`candidate`), an execution's (`row`), or both. */
interface MergedSlot {
  at: number;
  candidate?: SlotCandidate;
  row?: SlotRow;
}

/** The schedule's slots and the executions, by instant: one item per instant, the execution of the task that has the name first. */
function merge(slots: SlotCandidate[], rows: SlotRow[], taskId: string | null): MergedSlot[] {
  const byTime = new Map<number, MergedSlot>();
  for (const candidate of slots) byTime.set(candidate.at, { at: candidate.at, candidate });
  for (const row of rows) {
    const at = row.scheduledFor.getTime();
    const item = byTime.get(at) ?? { at };
    if (!item.row || (row.taskId !== null && row.taskId === taskId)) item.row = row;
    byTime.set(at, item);
  }
  return [...byTime.values()].sort((a, b) => a.at - b.at);
}

function present(item: MergedSlot, explained: ReturnType<typeof explainSlot>, timezone: string): TimelineItem {
  const row = item.row;
  return {
    scheduledFor: new Date(item.at).toISOString(),
    local: formatLocal(new Date(item.at), timezone),
    ...explained,
    trigger: row?.trigger ?? null,
    ...(row && {
      executionId: row.id,
      attempts: row.attempt,
      ...(row.startedAt && { startedAt: row.startedAt.toISOString() }),
      ...(row.finishedAt && { endedAt: row.finishedAt.toISOString() }),
    }),
  };
}

/**
 * The range asked about: `from` and `to` as given, else a day either side of the one given, else
 * the day up to now — from no earlier than `earliest` (the task's creation, the oldest slot kept).
 */
function rangeOf(query: { from?: string; to?: string }, now: number, earliest: number): { from: number; to: number } {
  const from = query.from !== undefined ? Date.parse(query.from) : undefined;
  const to = query.to !== undefined ? Date.parse(query.to) : undefined;
  if (from !== undefined && to !== undefined) return { from, to };
  if (from !== undefined) return { from, to: from + DAY_MS };
  if (to !== undefined) return { from: to - DAY_MS, to };
  return { from: Math.min(now, Math.max(now - DAY_MS, earliest)), to: now };
}

/** When the task first existed (the end of the span before its creation), or -∞ when unknown. */
function existedFrom(spans: readonly VersionSpan[]): number {
  return spans.find((s) => s.state !== 'absent')?.from ?? Number.NEGATIVE_INFINITY;
}

/** The instant a cursor of this range resumes after; refused when it is not one this API wrote for it. */
function cursorTime(cursor: string, from: number, to: number): number {
  const t = Number(decodeCursor<{ t: string }>(cursor, 't').t);
  if (!Number.isSafeInteger(t) || t < from - 1 || t > to) throw new InvalidCursorError();
  return t;
}

function groupBy(events: SlotEvent[]): Map<string, SlotEvent[]> {
  const map = new Map<string, SlotEvent[]>();
  for (const e of events) map.set(e.executionId, [...(map.get(e.executionId) ?? []), e]);
  return map;
}
