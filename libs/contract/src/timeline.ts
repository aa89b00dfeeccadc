import { z } from 'zod';
import { Instant, Timestamp } from './common.js';
import { type ExecutionStatus, Trigger } from './enums.js';
import { CURSOR_MAX } from './limits.js';

/** What became of a slot (DESIGN §7 "Timeline"): exactly one per slot. */
export const SLOT_OUTCOMES = [
  'succeeded',
  'failed',
  'running',
  'pending',
  'skipped',
  'missed',
  'cancelled',
  'not_planned',
  'upcoming',
  'pruned',
] as const;

/**
 * Why a slot has its outcome, for a program to branch on (the `detail` says it for people). Null
 * when nothing needs explaining: a slot that ran once, on time, and succeeded.
 * - `overlap`: a run of the task was in progress (the overlap policy); `paused`: the task was paused;
 *   `calendar`: a calendar the task excludes has the day; `dst_gap` / `dst_fold`: the wall time did
 *   not exist or occurred twice, and the task's DST policy decided; `before_created` / `after_end` /
 *   `deleted`: the task did not exist yet, its schedule had ended, it was deleted; `run_limit`: the
 *   task's run limit (`schedule.remainingRuns`) was spent and it completed; `edited`: a new
 *   version of the task replaced the slot; `catch_up`: run (or given up) as part of a catch-up
 *   under the misfire policy; `late`: it could not start within `maxDelay`; `no_leader`: no
 *   scheduler led the task's shard; `flow_control`: held back by a concurrency or rate key;
 *   `no_worker`: no live worker offers the handler; `retried`: it took more than one attempt;
 *   `handler_error`: the handler failed (once, with no retries left); `cancelled_by`: an operator
 *   cancelled it; `retention` (outcome `pruned`): the slot is older than the history kept, and its
 *   record went with it; `unrecorded`: the schedule defines the slot and nothing decided it — a
 *   slot lost, which should never be seen.
 */
export const SLOT_REASONS = [
  'overlap',
  'paused',
  'calendar',
  'dst_gap',
  'dst_fold',
  'before_created',
  'after_end',
  'run_limit',
  'deleted',
  'edited',
  'catch_up',
  'late',
  'no_leader',
  'flow_control',
  'no_worker',
  'retried',
  'handler_error',
  'cancelled_by',
  'manual',
  'backfill',
  'retention',
  'unrecorded',
] as const;

export const SlotOutcome = z.enum(SLOT_OUTCOMES).meta({ id: 'SlotOutcome' });
export const SlotReason = z.enum(SLOT_REASONS).meta({ id: 'SlotReason' });
export type SlotOutcome = z.infer<typeof SlotOutcome>;

/** Each outcome in words, as `punctual explain` and the console say it. */
export const SLOT_OUTCOME_WORDS: Record<SlotOutcome, string> = {
  succeeded: 'ran',
  failed: 'failed',
  running: 'running',
  pending: 'pending',
  skipped: 'skipped',
  missed: 'missed',
  cancelled: 'cancelled',
  not_planned: 'did not run',
  upcoming: 'upcoming',
  pruned: 'pruned',
};
export type SlotReason = z.infer<typeof SlotReason>;

/** The longest range one timeline request may cover. */
export const TIMELINE_RANGE_MAX_MS = 31 * 86_400_000;
/** The most slots on one page of a timeline. */
export const TIMELINE_LIMIT_MAX = 1_000;
export const TIMELINE_LIMIT_DEFAULT = 500;

/** One slot of a task's timeline (or a run by hand or a backfill, which has no slot of the schedule). */
export const TimelineItem = z
  .object({
    scheduledFor: Timestamp,
    local: z.string().meta({
      description: "the slot's wall time in the task's zone, with the offset",
      examples: ['2026-03-30T09:00:00.000+02:00'],
    }),
    outcome: SlotOutcome,
    reason: SlotReason.nullable(),
    detail: z.string().meta({
      description: 'what happened and what caused it, for people',
      examples: ['did not run: the task was paused at 08:12 by key ops-ci'],
    }),
    trigger: Trigger.nullable().meta({ description: 'how its execution came about; null when the slot has none' }),
    executionId: z.uuid().optional(),
    attempts: z.number().int().optional(),
    startedAt: Timestamp.optional(),
    endedAt: Timestamp.optional(),
  })
  .meta({ id: 'TimelineItem' });

export const TimelinePage = z
  .object({
    task: z.string(),
    timezone: z.string(),
    from: Timestamp,
    to: Timestamp,
    items: z.array(TimelineItem),
    nextCursor: z.string().nullable(),
  })
  .meta({ id: 'TimelinePage' });

/** `GET /v1/tasks/{name}/timeline`. */
export const TimelineQuery = z
  .strictObject({
    from: Instant.optional().meta({
      description: 'start of the range (exclusive of nothing: a slot at `from` is listed); default: a day before `to`',
    }),
    to: Instant.optional().meta({
      description:
        "end of the range, inclusive; default: a day after `from`, or now (then the range starts a day before, or at the task's creation or the oldest slot kept when later)",
    }),
    limit: z.coerce.number().int().min(1).max(TIMELINE_LIMIT_MAX).default(TIMELINE_LIMIT_DEFAULT),
    cursor: z
      .string()
      .max(CURSOR_MAX)
      .regex(/^[A-Za-z0-9_-]+$/, 'must be a cursor this API returned')
      .optional(),
  })
  .superRefine((q, ctx) => {
    if (q.from === undefined || q.to === undefined) return;
    const [from, to] = [Date.parse(q.from), Date.parse(q.to)];
    if (from > to)
      ctx.addIssue({
        code: 'custom',
        path: ['to'],
        message: 'must not be before from',
        params: { code: 'invalid_range' },
      });
    else if (to - from > TIMELINE_RANGE_MAX_MS)
      ctx.addIssue({
        code: 'custom',
        path: ['to'],
        message: 'must be at most 31 days after from',
        params: { code: 'invalid_range' },
      });
  });

export type TimelineItem = z.infer<typeof TimelineItem>;
export type TimelinePage = z.infer<typeof TimelinePage>;
export type TimelineQuery = z.input<typeof TimelineQuery>;

/** The outcome an execution in `status` gives its slot (a planned one: `pending`, or `upcoming` before its time). */
export function outcomeOfStatus(status: ExecutionStatus, due: boolean): SlotOutcome {
  switch (status) {
    case 'succeeded':
    case 'running':
    case 'skipped':
    case 'missed':
    case 'cancelled':
      return status;
    case 'dead':
      return 'failed';
    default:
      return due ? 'pending' : 'upcoming';
  }
}

/** The timeline's reason for an execution's skip reason. */
export function reasonOfSkip(skipReason: string | null): SlotReason | null {
  switch (skipReason) {
    case 'overlap':
    case 'late':
    case 'paused':
      return skipReason;
    case 'task_changed':
      return 'edited';
    case 'task_deleted':
      return 'deleted';
    case 'dst':
      return 'dst_fold';
    default:
      return null;
  }
}
