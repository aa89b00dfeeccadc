import {
  bareName,
  durationMs,
  formatDuration,
  outcomeOfStatus,
  TASK_DEFAULTS,
  reasonOfSkip,
  type SlotOutcome,
  type SlotReason,
} from '@punctual/contract';
import type { SlotEvent, SlotRow } from '@punctual/db';
import { formatLocal } from '@punctual/time';
import type { SlotCandidate } from './slot-candidates.js';
import { spanAt, type VersionSpan } from './task-versions.js';

export interface Explained {
  outcome: SlotOutcome;
  reason: SlotReason | null;
  detail: string;
}

/** What explains the slots of one page, read before it is explained (see TimelineService). */
export interface ExplainContext {
  now: number;
  timezone: string;
  spans: readonly VersionSpan[];
  /** When no scheduler led the task's shard (within the range asked about). */
  unled: readonly { from: Date; to: Date }[];
  shard: number;
  /** A slot not planned yet this close to now is being planned, not lost. */
  planningGraceMs: number;
  /** Slots before this are past the history's retention: one without a row is pruned, not lost. */
  keptFrom: number;
  /** The retention in force, in words (`30d`). */
  retention: string;
  events: ReadonlyMap<string, SlotEvent[]>;
  /** For a skip for overlap: the run it overlapped. */
  overlapped: ReadonlyMap<string, SlotRow | null>;
  /** For a missed slot: the catch-up run that superseded it, if one did. */
  catchUpOf: (at: number) => SlotRow | null;
  /** Whether a later slot was given up as missed (the planner only counts the oldest of a long backlog). */
  missedAfter: (at: number) => boolean;
  /** The handlers live workers offer; null when the directory could not be read. */
  offered: ReadonlySet<string> | null;
  /**
   * An audit actor (an API key's prefix) as people know it — `key ops-ci`, by the key's name — or,
   * to a key scoped to namespaces, `a key outside this key's namespaces` for a key it may not see.
   */
  who: (actor: string) => string;
}

/** The outcome of a slot, why, and a sentence naming the cause: from its execution when it has one, else from the schedule. */
export function explainSlot(
  at: number,
  row: SlotRow | undefined,
  candidate: SlotCandidate | undefined,
  ctx: ExplainContext,
): Explained {
  return row ? explainRow(row, candidate, ctx) : explainUnrecorded(at, candidate!, ctx);
}

function explainRow(row: SlotRow, candidate: SlotCandidate | undefined, ctx: ExplainContext): Explained {
  const at = row.scheduledFor.getTime();
  const span = spanAt(ctx.spans, at) ?? candidate?.span;
  const started = row.startedAt
    ? `started ${when(row.startedAt.getTime(), ctx)}${lateBy(row.startedAt.getTime() - row.fireAt.getTime())}`
    : '';
  const errors = attemptErrors(ctx.events.get(row.id) ?? []);
  const outcome = outcomeOfStatus(row.status, row.fireAt.getTime() <= ctx.now || row.trigger !== 'schedule');
  switch (row.status) {
    case 'succeeded':
    case 'running': {
      const verb = row.status === 'succeeded' ? `succeeded ${when(row.finishedAt!.getTime(), ctx)}` : 'still running';
      if (row.attempt > 1)
        return {
          outcome,
          reason: 'retried',
          detail: `${verb} on attempt ${row.attempt}; earlier attempts failed: ${errors || 'no error recorded'}`,
        };
      const why = startReason(row, candidate, ctx);
      return {
        outcome,
        reason: why?.reason ?? null,
        detail: `${started ? `${started}, ` : ''}${verb}${why ? ` — ${why.detail}` : ''}`,
      };
    }
    case 'dead':
      return row.attempt > 1
        ? {
            outcome,
            reason: 'retried',
            detail: `failed all ${row.attempt} attempts: ${errors || (row.error ?? 'no error recorded')}`,
          }
        : { outcome, reason: 'handler_error', detail: `the handler failed: ${row.error ?? 'no error recorded'}` };
    case 'retrying':
      return {
        outcome,
        reason: 'retried',
        detail: `attempt ${row.attempt} failed (${row.error ?? 'no error recorded'}); the next attempt is at ${when(row.nextAttemptAt?.getTime() ?? ctx.now, ctx)}`,
      };
    case 'scheduled':
    case 'queued':
      return outcome === 'upcoming'
        ? { outcome, reason: triggerReason(row), detail: `planned to fire at ${when(row.fireAt.getTime(), ctx)}` }
        : explainWaiting(row, span, ctx);
    case 'skipped':
      return explainSkip(row, span, ctx);
    case 'missed':
      return explainMissed(at, row, span, ctx);
    case 'cancelled':
      return explainCancel(row, ctx);
  }
}

/** Why a run that started did not start on time (or, for a run by hand, how it came about). */
function startReason(
  row: SlotRow,
  candidate: SlotCandidate | undefined,
  ctx: ExplainContext,
): { reason: SlotReason; detail: string } | null {
  if (row.trigger === 'catchup')
    return {
      reason: 'catch_up',
      detail: `run as the catch-up of the slots missed before it (misfire ${misfireOf(row, ctx)})`,
    };
  if (row.trigger === 'manual') return { reason: 'manual', detail: 'a run asked for by hand' };
  if (row.trigger === 'backfill') return { reason: 'backfill', detail: 'run by a backfill' };
  if (row.flowWaitedMs !== null && row.flowWaitedMs >= 1_000)
    return { reason: 'flow_control', detail: `waited ${seconds(row.flowWaitedMs)} for ${flowKey(row)}` };
  if (candidate?.shifted)
    return {
      reason: 'dst_gap',
      detail: `its wall time did not exist (clocks went forward): dst.gap moved it to ${when(row.scheduledFor.getTime(), ctx)}`,
    };
  return null;
}

function explainWaiting(row: SlotRow, span: VersionSpan | undefined, ctx: ExplainContext): Explained {
  const since = `due since ${when(row.fireAt.getTime(), ctx)}`;
  if (row.heldAt)
    return {
      outcome: 'pending',
      reason: 'flow_control',
      detail: `${since}, waiting ${seconds(ctx.now - row.heldAt.getTime())} so far for ${flowKey(row)}`,
    };
  const handler = span?.definition.handler;
  if (handler && ctx.offered && !ctx.offered.has(handler))
    return { outcome: 'pending', reason: 'no_worker', detail: `${since}: no live worker offers handler "${handler}"` };
  if (row.parkedAt)
    return {
      outcome: 'pending',
      reason: 'overlap',
      detail: `${since}, waiting for the run of the task ahead of it to end (overlap ${span?.definition.policy.overlap ?? 'buffer_one'})`,
    };
  const unled = unledAt(row.fireAt.getTime(), ctx);
  if (unled)
    return {
      outcome: 'pending',
      reason: 'no_leader',
      detail: `${since}: no scheduler has led shard ${ctx.shard} since ${when(unled.from.getTime(), ctx)}`,
    };
  return { outcome: 'pending', reason: triggerReason(row), detail: `${since}, waiting to start` };
}

function explainSkip(row: SlotRow, span: VersionSpan | undefined, ctx: ExplainContext): Explained {
  const reason = reasonOfSkip(row.skipReason);
  const decided = row.finishedAt?.getTime() ?? row.fireAt.getTime();
  switch (reason) {
    case 'overlap': {
      const other = ctx.overlapped.get(row.id);
      const policy = span?.definition.policy.overlap ?? TASK_DEFAULTS.overlap;
      return {
        outcome: 'skipped',
        reason,
        detail: other
          ? `execution ${other.id} (slot ${when(other.scheduledFor.getTime(), ctx)}) was still running${other.startedAt ? ` since ${when(other.startedAt.getTime(), ctx)}` : ''} (overlap ${policy})`
          : `a run of the task was still running (overlap ${policy})`,
      };
    }
    case 'late': {
      const unled = unledAt(row.scheduledFor.getTime(), ctx);
      if (unled) return { outcome: 'skipped', reason: 'no_leader', detail: `${noLeader(unled, ctx)}` };
      const held = row.heldAt
        ? `, held back by flow control on ${flowKey(row)} since ${when(row.heldAt.getTime(), ctx)}`
        : '';
      return {
        outcome: 'skipped',
        reason,
        detail: `it could not start within maxDelay ${maxDelayOf(span)} of its slot${held}`,
      };
    }
    case 'paused':
      return { outcome: 'skipped', reason, detail: `${pausedWords(decided, ctx)}` };
    case 'edited': {
      const by = spanAt(ctx.spans, decided);
      return {
        outcome: 'skipped',
        reason,
        detail: by?.at
          ? `version ${by.definition.version} of the task (${by.action?.replace('task.', '')} at ${when(by.at.getTime(), ctx)} by ${ctx.who(by.changedBy ?? '')}) replaced it`
          : 'a new version of the task replaced it',
      };
    }
    case 'deleted':
      return { outcome: 'skipped', reason, detail: `${deletedWords(decided, ctx)}` };
    default:
      return { outcome: 'skipped', reason, detail: `skip reason ${row.skipReason ?? 'not recorded'}` };
  }
}

function explainMissed(
  at: number,
  row: SlotRow | undefined,
  span: VersionSpan | undefined,
  ctx: ExplainContext,
): Explained {
  const catchUp = ctx.catchUpOf(at);
  if (catchUp && (!row || catchUp.id !== row.id)) {
    const unled = unledAt(at, ctx);
    const pausedTo = span?.state === 'paused' ? `; ${pausedWords(at, ctx)}` : unled ? `; ${noLeader(unled, ctx)}` : '';
    return {
      outcome: 'missed',
      reason: 'catch_up',
      detail: `catch-up run ${catchUp.id} (slot ${when(catchUp.scheduledFor.getTime(), ctx)}) ran in its place under misfire ${span?.definition.policy.misfire ?? TASK_DEFAULTS.misfire}${pausedTo}`,
    };
  }
  if (span?.state === 'paused') return { outcome: 'missed', reason: 'paused', detail: `${pausedWords(at, ctx)}` };
  const unled = unledAt(at, ctx);
  if (unled) return { outcome: 'missed', reason: 'no_leader', detail: `${noLeader(unled, ctx)}` };
  return {
    outcome: 'missed',
    reason: 'late',
    detail:
      `it was more than maxDelay ${maxDelayOf(span)} late when the scheduler came to it (misfire ` +
      `${span?.definition.policy.misfire ?? TASK_DEFAULTS.misfire})${row ? '' : '; only counted (missedCount)'}`,
  };
}

function explainCancel(row: SlotRow, ctx: ExplainContext): Explained {
  const event = [...(ctx.events.get(row.id) ?? [])].reverse().find((e) => e.toStatus === 'cancelled');
  const detail = (event?.detail ?? {}) as { reason?: string; by?: string };
  const at = event?.at.getTime() ?? row.finishedAt?.getTime() ?? ctx.now;
  if (detail.reason === 'task deleted')
    return { outcome: 'cancelled', reason: 'deleted', detail: `${deletedWords(at, ctx)}` };
  if (detail.reason?.startsWith('replaced by '))
    return {
      outcome: 'cancelled',
      reason: 'overlap',
      detail: `${detail.reason.replace('replaced by ', 'replaced by execution ')}, a later slot (overlap replace)`,
    };
  if (detail.reason === 'cancelled by a pause')
    return { outcome: 'cancelled', reason: 'paused', detail: `${pausedWords(at, ctx)} (with cancel)` };
  return {
    outcome: 'cancelled',
    reason: 'cancelled_by',
    detail: `cancelled at ${when(at, ctx)} by ${detail.by ? ctx.who(detail.by) : 'an operator'}`,
  };
}

/** A slot the schedule defines with no execution: not planned (and why), still to come, or given up. */
function explainUnrecorded(at: number, candidate: SlotCandidate, ctx: ExplainContext): Explained {
  const { span } = candidate;
  if (span.state === 'absent')
    return {
      outcome: 'not_planned',
      reason: 'before_created',
      detail: `the task was created later, at ${when(span.to, ctx)}`,
    };
  if (span.state === 'deleted')
    return { outcome: 'not_planned', reason: 'deleted', detail: `${deletedWords(at, ctx)}` };
  if (span.state === 'completed') {
    const last = span.definition.lastScheduledFor ? Date.parse(span.definition.lastScheduledFor) : span.from - 1;
    return {
      outcome: 'not_planned',
      reason: 'run_limit',
      detail: `the task's run limit (schedule.remainingRuns) was spent: it completed after its slot at ${when(last, ctx)}`,
    };
  }
  if (candidate.notPlanned)
    return { outcome: 'not_planned', reason: candidate.notPlanned.reason, detail: notPlannedWords(at, candidate, ctx) };
  if (span.state === 'paused' && !(at <= ctx.now && ctx.catchUpOf(at)))
    return { outcome: 'not_planned', reason: 'paused', detail: `${pausedWords(at, ctx)}` };
  if (at > ctx.now && candidate.shifted)
    return {
      outcome: 'upcoming',
      reason: 'dst_gap',
      detail: `to fire at ${when(at, ctx)}: its wall time does not exist that day (clocks go forward), dst.gap moves it`,
    };
  if (at > ctx.now) return { outcome: 'upcoming', reason: null, detail: `to fire at ${when(at, ctx)}` };
  if (at < ctx.keptFrom)
    return {
      outcome: 'pruned',
      reason: 'retention',
      detail: `its record is past the history's retention (${ctx.retention}): the oldest slot kept is ${when(ctx.keptFrom, ctx)}`,
    };
  const unled = unledAt(at, ctx);
  const maxDelay = durationMs(span.definition.policy.maxDelay) || 3_600_000;
  if (unled && at + maxDelay > ctx.now)
    return { outcome: 'pending', reason: 'no_leader', detail: `${noLeader(unled, ctx)}` };
  if (at > ctx.now - ctx.planningGraceMs) return { outcome: 'pending', reason: null, detail: 'due, being planned' };
  if (ctx.catchUpOf(at) || unled || ctx.missedAfter(at)) return explainMissed(at, undefined, span, ctx);
  return {
    outcome: 'missed',
    reason: 'unrecorded',
    detail: 'the schedule defines this slot and no execution records what became of it',
  };
}

function notPlannedWords(at: number, candidate: SlotCandidate, ctx: ExplainContext): string {
  const { span, notPlanned } = candidate;
  const date = formatLocal(new Date(at), ctx.timezone).slice(0, 10);
  const dst = span.definition.schedule.dst;
  switch (notPlanned!.reason) {
    case 'after_end':
      return `the schedule ended at ${when(span.schedule.endAt!.getTime(), ctx)} (schedule.endAt)`;
    case 'calendar':
      return `calendar "${bareName(notPlanned!.calendar ?? '')}" excludes ${date}`;
    case 'dst_gap':
      return `its wall time does not exist on ${date} in ${ctx.timezone} (clocks go forward); dst.gap skip drops it`;
    case 'edited':
      return (
        `version ${span.definition.version} of the task (${span.action?.replace('task.', '')} at ` +
        `${when(span.from, ctx)} by ${ctx.who(span.changedBy ?? '')}) has no slot here; the version ` +
        `before it had`
      );
    case 'dst_fold':
      return `its wall time occurs twice on ${date} in ${ctx.timezone} (clocks go back); dst.overlap ${dst?.overlap ?? 'first'} runs it once`;
    default:
      return 'not planned';
  }
}

function pausedWords(at: number, ctx: ExplainContext): string {
  const pause = [...ctx.spans].reverse().find((s) => s.state === 'paused' && s.from <= at);
  const note = pause?.definition.pauseNote ? `: "${pause.definition.pauseNote}"` : '';
  return pause?.at
    ? `the task was paused at ${when(pause.at.getTime(), ctx)} by ${ctx.who(pause.changedBy ?? '')}${note}`
    : `the task was paused${note}`;
}

function deletedWords(at: number, ctx: ExplainContext): string {
  const deleted = [...ctx.spans].reverse().find((s) => s.state === 'deleted' && s.from <= at + 1_000);
  return deleted?.at
    ? `the task was deleted at ${when(deleted.at.getTime(), ctx)} by ${ctx.who(deleted.changedBy ?? '')}`
    : 'the task was deleted';
}

function noLeader(unled: { from: Date; to: Date }, ctx: ExplainContext): string {
  const until = unled.to.getTime() >= ctx.now ? 'now' : when(unled.to.getTime(), ctx);
  return `no scheduler led shard ${ctx.shard} from ${when(unled.from.getTime(), ctx)} to ${until}`;
}

function unledAt(at: number, ctx: ExplainContext): { from: Date; to: Date } | undefined {
  return ctx.unled.find((u) => u.from.getTime() <= at && at <= u.to.getTime());
}

function attemptErrors(events: readonly SlotEvent[]): string {
  return events
    .filter((e) => e.toStatus === 'retrying' || e.toStatus === 'dead')
    .map(
      (e, i) =>
        `#${i + 1} ${String((e.detail as { error?: string } | null)?.error ?? 'no error recorded').slice(0, 200)}`,
    )
    .join('; ');
}

function triggerReason(row: SlotRow): SlotReason | null {
  return row.trigger === 'catchup'
    ? 'catch_up'
    : row.trigger === 'manual'
      ? 'manual'
      : row.trigger === 'backfill'
        ? 'backfill'
        : null;
}

function misfireOf(row: SlotRow, ctx: ExplainContext): string {
  return spanAt(ctx.spans, row.scheduledFor.getTime())?.definition.policy.misfire ?? TASK_DEFAULTS.misfire;
}

function maxDelayOf(span: VersionSpan | undefined): string {
  return String(span?.definition.policy.maxDelay ?? '1h');
}

/**
 * What a run waits or waited on: its keys (`key "a" and "b"`), its namespace's run quotas when it
 * is held on them, and either for a run that started under both.
 */
function flowKey(row: SlotRow): string {
  const keys = [row.concurrencyKey, row.rateKey]
    .filter(Boolean)
    .map((k) => `"${k}"`)
    .join(' and ');
  const quota = row.quotaNamespace === null ? null : `the run quotas of namespace "${row.quotaNamespace}"`;
  if (row.heldAt !== null && quota) return quota;
  if (keys && quota) return `key ${keys} or ${quota}`;
  return keys ? `key ${keys}` : (quota ?? 'key (none)');
}

function lateBy(ms: number): string {
  return ms >= 1_000 ? ` (${seconds(ms)} after its fire time)` : '';
}

function seconds(ms: number): string {
  return ms < 60_000 ? `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s` : formatDuration(Math.round(ms / 1000) * 1000);
}

/** An instant as people read it in the task's zone: `2026-03-29 03:30:00`. */
export function when(ms: number, ctx: Pick<ExplainContext, 'timezone'>): string {
  return formatLocal(new Date(ms), ctx.timezone).slice(0, 19).replace('T', ' ');
}
