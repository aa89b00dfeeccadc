import { z } from 'zod';
import { TaskChanges } from './changes.js';
import { Duration, durationMs, FieldChange, Instant, Page, PageQuery, Timestamp } from './common.js';
import {
  Disambiguation,
  DstGap,
  DstOverlap,
  HealthState,
  MisfirePolicy,
  NotifyEvent,
  OverlapPolicy,
  TaskStatus,
} from './enums.js';
import { DUE_WORDS, Execution } from './execution.js';
import {
  AT_MAX,
  ATTEMPTS_MAX,
  CALENDAR_NAME_PATTERN,
  DURATION_MAX_MS,
  EXCLUDE_MAX,
  BATCH_MAX,
  FLOW_KEY_MAX,
  FLOW_LIMIT_MAX,
  RATE_PER_MAX_MS,
  RATE_PER_MIN_MS,
  CRON_MAX,
  DESCRIPTION_MAX,
  HANDLER_NAME_PATTERN,
  LABEL_KEY_PATTERN,
  LABEL_VALUE_PATTERN,
  LABELS_MAX,
  MANAGED_BY_PATTERN,
  RRULE_MAX,
  SECRET_FIELD_MAX,
  SECRET_FIELDS_MAX,
  TASK_DEFAULTS,
  TASK_NAME_PATTERN,
  TIMEZONE_MAX,
  UPCOMING_COUNT,
  UPCOMING_MAX,
  URL_MAX,
} from './limits.js';

export const TaskName = z
  .string()
  .regex(TASK_NAME_PATTERN, `must match ${TASK_NAME_PATTERN.source}`)
  .meta({ examples: ['nightly-report'] });
export const HandlerName = z
  .string()
  .regex(HANDLER_NAME_PATTERN, 'must be a handler name such as "http" or "noop"')
  .meta({ examples: ['http'] });

/** `{ "team": "billing" }`: at most 20, keys and values as {@link LABEL_KEY_PATTERN} and {@link LABEL_VALUE_PATTERN} say. */
export const Labels = z
  .record(
    z.string().regex(LABEL_KEY_PATTERN, `label keys must match ${LABEL_KEY_PATTERN.source}`),
    z.string().regex(LABEL_VALUE_PATTERN, `label values must match ${LABEL_VALUE_PATTERN.source}`),
  )
  .refine((labels) => Object.keys(labels).length <= LABELS_MAX, `at most ${LABELS_MAX} labels`)
  .meta({ description: `at most ${LABELS_MAX} labels; filter with ?label=key=value`, examples: [{ team: 'billing' }] });

export const ManagedBy = z
  .string()
  .regex(MANAGED_BY_PATTERN, `must match ${MANAGED_BY_PATTERN.source}`)
  .meta({
    description: 'who manages this task (e.g. `punctual-apply`); null when nobody does',
    examples: ['punctual-apply'],
  });

/** A calendar's name, as a task's `schedule.exclude` names it. */
export const CalendarName = z
  .string()
  .regex(CALENDAR_NAME_PATTERN, `must match ${CALENDAR_NAME_PATTERN.source}`)
  .meta({ examples: ['us-holidays'] });

export const Dst = z.strictObject({ gap: DstGap.optional(), overlap: DstOverlap.optional() });

/** The kinds of schedule: a task's schedule holds exactly one of these fields. */
export const SCHEDULE_KINDS = ['cron', 'rrule', 'at', 'every'] as const;
export type ScheduleKind = (typeof SCHEDULE_KINDS)[number];

/** The kinds a schedule (or a change to one) names, in {@link SCHEDULE_KINDS} order. */
export function scheduleKindsOf(schedule: Partial<Record<ScheduleKind, unknown>>): ScheduleKind[] {
  return SCHEDULE_KINDS.filter((kind) => schedule[kind] !== undefined);
}

const ONE_KIND = `must hold exactly one of ${SCHEDULE_KINDS.join(', ')}`;

/** The fields of a schedule, each checked on its own. */
const ScheduleFields = z.strictObject({
  cron: z
    .string()
    .min(1)
    .max(CRON_MAX)
    .optional()
    .meta({
      description: '5 fields (minute first) or 6 (seconds first); macros such as @daily; H hashed by task name',
      examples: ['0 9 * * 1-5'],
    }),
  rrule: z
    .string()
    .min(1)
    .max(RRULE_MAX)
    .optional()
    .meta({ examples: ['DTSTART;TZID=Europe/Berlin:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO'] }),
  at: z
    .string()
    .min(1)
    .max(AT_MAX)
    .optional()
    .meta({
      description: 'an instant with an offset, or a local time in `timezone`',
      examples: ['2026-06-01T07:00:00Z'],
    }),
  every: Duration.optional().meta({ description: 'a fixed interval from startAt (or creation)', examples: ['15m'] }),
  timezone: z
    .string()
    .min(1)
    .max(TIMEZONE_MAX)
    .optional()
    .meta({ description: 'an IANA zone', default: TASK_DEFAULTS.timezone, examples: ['Europe/Berlin'] }),
  startAt: Instant.nullable().optional(),
  endAt: Instant.nullable().optional(),
  remainingRuns: z
    .number()
    .int()
    .min(0)
    .max(1_000_000_000)
    .nullable()
    .optional()
    .meta({
      description:
        'a run limit: how many more slots may run, counted down as they are planned; at 0 the task completes; null or absent: no limit',
      examples: [10],
    }),
  jitter: Duration.optional().meta({
    description: 'a deterministic delay in [0, jitter)',
    default: TASK_DEFAULTS.jitter,
  }),
  dst: Dst.optional(),
  disambiguation: Disambiguation.optional().meta({ description: 'for a local `at` the clocks skip or repeat' }),
  exclude: z
    .array(CalendarName)
    .max(EXCLUDE_MAX)
    .optional()
    .meta({
      description:
        "calendars of excluded days: a slot whose local date (in the calendar's zone, else the schedule's) one of them excludes is not planned",
      examples: [['us-holidays']],
    }),
});

/** A schedule as a user writes it: exactly one of `cron`, `rrule`, `at`, `every` (else 422 `invalid_schedule`). */
export const ScheduleSpec = ScheduleFields.refine((schedule) => scheduleKindsOf(schedule).length === 1, {
  message: ONE_KIND,
  params: { code: 'invalid_schedule' },
}).meta({
  id: 'ScheduleSpec',
  examples: [{ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' }],
});

/** A patch's schedule: its fields merge over the task's, and a kind it names replaces the task's kind — at most one. */
export const SchedulePatch = ScheduleFields.refine((schedule) => scheduleKindsOf(schedule).length <= 1, {
  message: `must name at most one of ${SCHEDULE_KINDS.join(', ')}: the kind it names replaces the task's`,
  params: { code: 'invalid_schedule' },
}).meta({
  id: 'SchedulePatch',
});

export const RetrySpec = z.strictObject({
  attempts: z.number().int().min(1).max(ATTEMPTS_MAX).optional().meta({ default: TASK_DEFAULTS.attempts }),
  backoff: Duration.optional().meta({ default: TASK_DEFAULTS.backoff }),
  maxBackoff: Duration.optional().meta({ default: TASK_DEFAULTS.maxBackoff }),
});

/** A flow-control key shared by the tasks that name it. */
export const FlowKey = z
  .string()
  .min(1)
  .max(FLOW_KEY_MAX)
  .refine((key) => !key.includes('/'), 'holds no "/": a key names a capacity of its own namespace only')
  .meta({
    description: `1–${FLOW_KEY_MAX} characters, no "/"; the tasks of a namespace naming the same key share its limit`,
    examples: ['openai'],
  });
const FlowLimit = z.number().int().min(1).max(FLOW_LIMIT_MAX);

/** `policy.concurrency`: at most `limit` runs of all tasks sharing `key` at once, across every worker. */
export const ConcurrencySpec = z
  .strictObject({
    key: FlowKey,
    limit: FlowLimit.meta({ description: 'runs of the key at once (1–10,000)', examples: [3] }),
  })
  .meta({ id: 'ConcurrencySpec', examples: [{ key: 'openai', limit: 3 }] });

/** `policy.rateLimit`: at most `limit` starts of all tasks sharing `key` in any window of `per`. */
export const RateLimitSpec = z
  .strictObject({
    key: FlowKey,
    limit: FlowLimit.meta({ description: 'starts per window (1–10,000)', examples: [5] }),
    per: Duration.refine(
      (value) => durationMs(value) >= RATE_PER_MIN_MS && durationMs(value) <= RATE_PER_MAX_MS,
      'must be between 100ms and 24h',
    ).meta({
      description: 'the window, 100ms to 24h',
      examples: ['1s', '1m'],
    }),
  })
  .meta({ id: 'RateLimitSpec', examples: [{ key: 'twitter:acct-42', limit: 5, per: '1s' }] });

/** `policy.pauseAfter`: the failure breaker (slots that ended dead; cancels and overlap skips are not failures). */
export const PauseAfterSpec = z
  .strictObject({
    failures: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .meta({ description: 'slots ended dead (after their retries)', examples: [5] }),
    within: Duration.refine((value) => durationMs(value) >= 1_000, 'must be at least 1s').meta({
      description: 'counted over this long back',
      examples: ['1h'],
    }),
  })
  .meta({ id: 'PauseAfterSpec' });

export const PolicySpec = z.strictObject({
  overlap: OverlapPolicy.optional().meta({ default: TASK_DEFAULTS.overlap }),
  misfire: MisfirePolicy.optional().meta({ default: TASK_DEFAULTS.misfire }),
  maxDelay: Duration.optional().meta({ default: TASK_DEFAULTS.maxDelay }),
  retry: RetrySpec.optional(),
  timeout: Duration.optional().meta({ default: TASK_DEFAULTS.timeout }),
  concurrency: ConcurrencySpec.nullable()
    .optional()
    .meta({ description: 'a concurrency key shared across tasks; null or absent: none' }),
  rateLimit: RateLimitSpec.nullable()
    .optional()
    .meta({ description: 'a rate limit shared across tasks; null or absent: none' }),
  pauseAfter: PauseAfterSpec.nullable().optional().meta({
    description:
      'a failure breaker: pause the task once this many of its slots ended dead within this long; null or absent: never',
  }),
});

/** `slo`: what on time means for this task; a task with one gets per-task metric series. */
export const SloSpec = z
  .strictObject({
    startWithin: Duration.refine(
      (value) => durationMs(value) >= 1 && durationMs(value) <= DURATION_MAX_MS,
      'must be between 1ms and 24d',
    ).meta({
      description: 'a slot that has not started this long after its fire time is late',
      examples: ['1m'],
    }),
  })
  .meta({ id: 'SloSpec', examples: [{ startWithin: '1m' }] });

export const NotifySpec = z.strictObject({
  url: z
    .string()
    .max(URL_MAX)
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .nullable()
    .optional()
    .meta({ examples: ['https://example.com/punctual-events'] }),
  on: z
    .array(NotifyEvent)
    .max(NotifyEvent.options.length)
    .optional()
    .meta({ default: [...TASK_DEFAULTS.notifyOn] }),
});

/** The fields of a task a user writes, all but its name. */
const taskFields = {
  description: z
    .string()
    .max(DESCRIPTION_MAX)
    .nullable()
    .optional()
    .meta({ examples: ['Sends the nightly report'] }),
  handler: HandlerName,
  payload: z
    .record(z.string(), z.unknown())
    .optional()
    .meta({
      description: 'a JSON object, at most 64 KiB',
      examples: [{ url: 'https://example.com/hook', method: 'POST' }],
    }),
  secretFields: z
    .array(z.string().min(1).max(SECRET_FIELD_MAX))
    .max(SECRET_FIELDS_MAX)
    .optional()
    .meta({ description: 'payload fields never logged or shown', examples: [['headers.authorization']] }),
  schedule: ScheduleSpec,
  policy: PolicySpec.optional(),
  notify: NotifySpec.optional(),
  paused: z.boolean().optional().meta({ default: false }),
  labels: Labels.optional(),
  managedBy: ManagedBy.nullable().optional(),
  slo: SloSpec.nullable()
    .optional()
    .meta({ description: 'opts the task into per-task metric series and alerts; null or absent: none' }),
};

/** A task as a user writes it (`POST /v1/tasks`, a file for `punctual apply`). */
export const TaskSpec = z.strictObject({ name: TaskName, ...taskFields }).meta({ id: 'TaskSpec' });
/** `PUT /v1/tasks/{name}`: the name comes from the URL; if given it must match. */
export const TaskPutBody = z.strictObject({ name: TaskName.optional(), ...taskFields }).meta({ id: 'TaskPutBody' });
/** `PATCH /v1/tasks/{name}`: any subset; nested objects are merged, `labels` replaced as a whole. */
export const TaskPatch = z
  .strictObject({ ...taskFields, schedule: SchedulePatch })
  .partial()
  .meta({ id: 'TaskPatch' });
/** `POST /v1/tasks:batch`: create or replace up to 1,000 tasks, all or nothing. */
export const TaskBatchRequest = z
  .strictObject({ tasks: z.array(TaskSpec).min(1).max(BATCH_MAX) })
  .meta({ id: 'TaskBatchRequest' });

/** A task's schedule as the API shows it. */
export const Schedule = z.object({
  cron: z.string().optional(),
  rrule: z.string().optional(),
  at: Timestamp.optional(),
  every: z.string().optional(),
  timezone: z.string(),
  startAt: Timestamp.nullable(),
  endAt: Timestamp.nullable(),
  remainingRuns: z
    .number()
    .int()
    .nullable()
    .meta({ description: 'slots still to run under a run limit; null: no limit' }),
  jitter: z.string(),
  dst: z.object({ gap: DstGap.optional(), overlap: DstOverlap.optional() }).optional(),
  exclude: z.array(z.string()).optional().meta({ description: 'the calendars of excluded days (absent: none)' }),
});

/** How a task is doing (DESIGN §8), computed from its executions when it is read. */
export const TaskHealth = z
  .object({
    state: HealthState.meta({
      description:
        'late: a due slot has not started within slo.startWithin (else maxDelay); failing: its latest finished slot is dead; never_ran: no slot has finished; paused; completed; ok',
    }),
    lastSuccessAt: Timestamp.nullable().meta({ description: 'when its latest successful run finished' }),
    lastSlotAt: Timestamp.nullable().meta({ description: 'its latest slot that has come (scheduled_for ≤ now)' }),
    consecutiveFailures: z.number().int().meta({ description: 'dead slots since its latest success' }),
    pauseNote: z
      .string()
      .optional()
      .meta({ description: "while paused with a note (the pause's, or the failure breaker's): why" }),
    waitingForWorker: z
      .boolean()
      .optional()
      .meta({
        description:
          'true when the task is active and no live worker offers its handler: its due runs wait for one (GET ' +
          '/v1/cluster lists them under waitingForWorker); shown by GET /v1/tasks and GET /v1/tasks/{name}',
      }),
  })
  .meta({ id: 'TaskHealth' });

/** A task as the API returns it (never its secret). */
export const Task = z
  .object({
    name: z.string(),
    namespace: z.string().meta({ description: 'the namespace the task belongs to' }),
    description: z.string().nullable(),
    handler: z.string(),
    payload: z.unknown().meta({ description: 'secret fields shown as "[redacted]"' }),
    secretFields: z.array(z.string()),
    schedule: Schedule,
    policy: z.object({
      overlap: OverlapPolicy,
      misfire: MisfirePolicy,
      maxDelay: z.string(),
      retry: z.object({ attempts: z.number().int(), backoff: z.string(), maxBackoff: z.string() }),
      timeout: z.string(),
      concurrency: z.object({ key: z.string(), limit: z.number().int() }).nullable(),
      rateLimit: z.object({ key: z.string(), limit: z.number().int(), per: z.string() }).nullable(),
      pauseAfter: z.object({ failures: z.number().int(), within: z.string() }).nullable(),
    }),
    notify: z.object({ url: z.string().nullable(), on: z.array(z.string()) }),
    paused: z.boolean(),
    pauseNote: z.string().nullable().meta({ description: "why it was paused (the pause's note); null while active" }),
    labels: z.record(z.string(), z.string()),
    managedBy: z.string().nullable(),
    slo: z.object({ startWithin: z.string() }).nullable(),
    health: TaskHealth,
    status: TaskStatus,
    nextRunAt: Timestamp.nullable().meta({
      description:
        "the task's next run: the first slot `upcoming` lists (a slot planned and not yet fired, else the schedule's next); null while paused, once completed, or when its schedule has no more slots",
    }),
    planCursor: Timestamp.nullable().meta({
      description:
        "the planner's cursor: the first slot of the schedule not yet planned as an execution (slots are " +
        'planned a moment ahead, so it is usually a slot or two after nextRunAt); null once the schedule has ' +
        'no more',
    }),
    lastScheduledFor: Timestamp.nullable(),
    missedCount: z.number().int(),
    lastError: z.string().nullable().meta({
      description:
        "why the planner cannot compute the task's slots (it stays active with its cursor, and is tried again every minute); null when it can",
    }),
    lastErrorAt: Timestamp.nullable(),
    version: z.number().int().meta({ description: 'moves on every change; send it as If-Match' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Task' });

/** Advice about a change that was made all the same, e.g. `no live worker offers handler "x"`. */
export const Warnings = z.array(z.string()).meta({ description: 'e.g. no live worker offers the handler' });

/** `POST /v1/tasks` (and `PUT` when it creates): the task, its HMAC secret (shown this once) and warnings. */
export const CreatedTask = Task.extend({ secret: z.string(), warnings: Warnings }).meta({ id: 'CreatedTask' });
/** `PUT /v1/tasks/{name}`: 201 with the secret when created, 200 without when replaced. */
export const WrittenTask = Task.extend({
  secret: z.string().optional(),
  warnings: Warnings,
  dryRun: z.literal(true).optional().meta({ description: 'present on a dry run: nothing was stored' }),
  changes: TaskChanges.optional().meta({ description: 'on a dry run: what the change would do' }),
}).meta({ id: 'WrittenTask' });
/** `PATCH /v1/tasks/{name}`: the task, and on a dry run what the change would do. */
export const PatchedTask = Task.extend({
  dryRun: z.literal(true).optional().meta({ description: 'present on a dry run: nothing was stored' }),
  changes: TaskChanges.optional().meta({ description: 'on a dry run: what the change would do' }),
}).meta({ id: 'PatchedTask' });
/** `GET /v1/tasks/{name}`: the task, its next fire times and its last execution. */
export const TaskDetail = Task.extend({
  upcoming: z.array(Timestamp).meta({
    description:
      "The next slots to fire from now, earliest first: the task's executions planned and not yet due, then " +
      "the schedule's slots after them (none while paused). Each is a slot as `scheduledFor` shows it; with " +
      '`jitter` its execution fires up to that much later (`fireAt`), so a slot listed may be just behind ' +
      'now while its fire time is still to come. Once its fire time comes, a slot leaves this list for the ' +
      "task's executions.",
  }),
  lastExecution: Execution.nullable().meta({
    description:
      `The execution of the task's latest due slot, in whatever state it is (running, succeeded, dead…); ` +
      `null while none is due. A slot planned ahead never shows here, and a task whose runs all died shows ` +
      `a dead one. ${DUE_WORDS}`,
  }),
}).meta({ id: 'TaskDetail' });
export const TaskPage = Page(Task).meta({ id: 'TaskPage' });
/** `GET /v1/tasks/{name}`. */
export const TaskDetailQuery = z.strictObject({
  upcoming: z.coerce
    .number()
    .int()
    .min(1)
    .max(UPCOMING_MAX)
    .default(UPCOMING_COUNT)
    .meta({ description: `how many next fire times to show (at most ${UPCOMING_MAX})` }),
});

export const TaskBatchItem = z.object({
  index: z.number().int(),
  name: z.string(),
  created: z.boolean(),
  version: z.number().int(),
  nextRunAt: Timestamp.nullable().meta({ description: "the task's next run, as the task's own nextRunAt" }),
  secret: z.string().optional().meta({ description: 'only for a created task: shown this once' }),
  changes: TaskChanges.optional().meta({ description: 'on a dry run: what the change would do to this task' }),
});
export const TaskBatchResponse = z
  .object({
    items: z.array(TaskBatchItem),
    created: z.number().int(),
    replaced: z.number().int(),
    warnings: Warnings,
    dryRun: z.literal(true).optional(),
  })
  .meta({ id: 'TaskBatchResponse' });

/** One version of a task (DESIGN §7 "versions"): the definition a change left, who made it, when and why. */
export const TaskVersion = z
  .object({
    version: z.number().int(),
    action: z.string().meta({
      description:
        'the change that made it: task.create, task.update, task.replace, task.pause, task.resume, task.rollback, task.restore, calendar.put',
      examples: ['task.update'],
    }),
    changedAt: Timestamp,
    changedBy: z.string().meta({ description: 'the API key (its prefix) that made the change' }),
    reason: z.string().nullable(),
    current: z
      .boolean()
      .meta({ description: 'the version the task has now (false for every version of a deleted task)' }),
    definition: Task.omit({ health: true }).meta({
      description: 'the task as this version left it (secret fields redacted)',
    }),
  })
  .meta({ id: 'TaskVersion' });
export const TaskVersionPage = z
  .object({ items: z.array(TaskVersion), nextCursor: z.string().nullable() })
  .meta({ id: 'TaskVersionPage' });
/** A version and how it differs from another (by default the one before it). */
export const TaskVersionDetail = TaskVersion.extend({
  against: z.number().int().nullable().meta({ description: 'the version it is compared with; null for the first' }),
  diff: z.array(FieldChange),
}).meta({ id: 'TaskVersionDetail' });

/** `?label=team=billing` (repeat for AND). */
export const LabelSelector = z
  .string()
  .max(200)
  .refine((value) => {
    const at = value.indexOf('=');
    return at > 0 && LABEL_KEY_PATTERN.test(value.slice(0, at)) && LABEL_VALUE_PATTERN.test(value.slice(at + 1));
  }, 'must be key=value, e.g. team=billing');

export const TaskListQuery = PageQuery.extend({
  status: TaskStatus.optional(),
  handler: z.string().max(64).optional(),
  q: z.string().max(128).optional().meta({ description: 'a substring of the name or description' }),
  label: z
    .array(LabelSelector)
    .max(LABELS_MAX)
    .optional()
    .meta({ description: 'key=value; repeat for tasks with all of them' }),
  managedBy: z.string().max(128).optional(),
  health: HealthState.optional().meta({ description: 'only tasks in this health state' }),
});

export type TaskSpec = z.infer<typeof TaskSpec>;
export type TaskPutBody = z.infer<typeof TaskPutBody>;
export type TaskPatch = z.infer<typeof TaskPatch>;
export type ScheduleSpec = z.infer<typeof ScheduleSpec>;
export type PolicySpec = z.infer<typeof PolicySpec>;
export type ConcurrencySpec = z.infer<typeof ConcurrencySpec>;
export type RateLimitSpec = z.infer<typeof RateLimitSpec>;
export type Task = z.infer<typeof Task>;
export type CreatedTask = z.infer<typeof CreatedTask>;
export type WrittenTask = z.infer<typeof WrittenTask>;
export type PatchedTask = z.infer<typeof PatchedTask>;
export type TaskVersion = z.infer<typeof TaskVersion>;
export type TaskVersionPage = z.infer<typeof TaskVersionPage>;
export type TaskVersionDetail = z.infer<typeof TaskVersionDetail>;
export type TaskDetail = z.infer<typeof TaskDetail>;
export type TaskBatchRequest = z.infer<typeof TaskBatchRequest>;
export type TaskBatchItem = z.infer<typeof TaskBatchItem>;
export type TaskBatchResponse = z.infer<typeof TaskBatchResponse>;
export type TaskListQuery = z.input<typeof TaskListQuery>;
export type TaskDetailQuery = z.input<typeof TaskDetailQuery>;
export type Labels = z.infer<typeof Labels>;
export type TaskHealth = z.infer<typeof TaskHealth>;
export type SloSpec = z.infer<typeof SloSpec>;
