import { randomBytes } from 'node:crypto';
import type { Calendar, Prisma } from '@punctual/db';
import { type CalendarSnapshot, excludedDaysOf } from '@punctual/planning';
import {
  durationMs,
  PAYLOAD_MAX_BYTES,
  PAYLOAD_MAX_DEPTH,
  scheduleKindsOf,
  TASK_DEFAULTS,
  type ScheduleSpec as ScheduleInput,
  type TaskSpec,
} from '@punctual/contract';
import { compileSchedule, parseAt, type ScheduleSpec } from '@punctual/time';
import { InvalidTaskError, PayloadTooLargeError } from './errors.js';

/** The columns of a task its definition does not set: its identity and secret, and what runs and edits keep up. */
type BookkeepingField =
  | 'id'
  | 'namespace'
  | 'secret'
  | 'lastScheduledFor'
  | 'missedCount'
  | 'version'
  | 'planVersion'
  | 'lastError'
  | 'lastErrorAt'
  | 'createdAt'
  | 'updatedAt'
  | 'pauseNote';

/** Every other column of a task, each set (a null where the definition has none): what a definition decides. */
export type TaskDefinition = Required<Omit<Prisma.TaskCreateInput, BookkeepingField | 'executions'>>;

/**
 * Validates a task's meaning and turns it into columns, with its first slot as the cursor. Its
 * shape — names, patterns, one schedule kind, instants — is the contract's `TaskSpec`, checked where
 * it came in; this checks what needs more than the spec: the schedule's expressions, zone and
 * bounds against `now`, the calendars, the payload's size. Throws `InvalidTaskError` or the time
 * library's errors, each naming the field.
 *
 * A one-off instant (`schedule.at`) must lie ahead of `now`: created or moved to the past, the task
 * would complete without ever running. `current` is the task being replaced: its own instant, kept
 * as it is, stays valid once it has passed (a later edit of its description, say).
 *
 * `calendars` are the stored calendars the caller found (and locked) for `schedule.exclude`: a name
 * without one is refused; the task keeps a copy of each (see {@link CalendarSnapshot}).
 */
export function toTaskDefinition(
  input: TaskSpec,
  now: Date,
  anchor: Date = now,
  current: { runAt: Date | null } | null = null,
  calendars: Calendar[] = [],
): TaskDefinition {
  checkPayload(input.payload);
  const { spec, runAt, everyMs, snapshots } = scheduleSpecFromInput(input.schedule, input.name, anchor, calendars);
  if (runAt && runAt.getTime() <= now.getTime() && runAt.getTime() !== current?.runAt?.getTime()) {
    throw new InvalidTaskError(
      'schedule.at',
      'schedule.at is in the past: a one-off task must be due after it is created or changed',
      'invalid_schedule',
    );
  }
  const s = input.schedule;
  const kind = spec.kind;
  const timezone = s.timezone ?? TASK_DEFAULTS.timezone;
  const startAt = spec.startAt ?? null;
  const endAt = spec.endAt ?? null;
  const nextRunAt = s.remainingRuns === 0 ? null : compileSchedule(spec).next(now);
  const p = input.policy ?? {};
  return {
    name: input.name,
    description: input.description ?? null,
    handler: input.handler,
    payload: (input.payload ?? {}) as Prisma.InputJsonValue,
    secretFields: input.secretFields ?? [],
    scheduleKind: kind,
    cron: kind === 'cron' ? s.cron! : null,
    rrule: kind === 'rrule' ? s.rrule! : null,
    runAt,
    everyMs: everyMs === null ? null : BigInt(everyMs),
    timezone,
    startAt,
    endAt,
    remainingRuns: s.remainingRuns ?? null,
    jitterMs: durationMs(s.jitter ?? TASK_DEFAULTS.jitter),
    dstGap: s.dst?.gap ?? null,
    dstOverlap: s.dst?.overlap ?? null,
    overlap: p.overlap ?? TASK_DEFAULTS.overlap,
    misfire: p.misfire ?? TASK_DEFAULTS.misfire,
    maxDelayMs: durationMs(p.maxDelay ?? TASK_DEFAULTS.maxDelay),
    maxAttempts: p.retry?.attempts ?? TASK_DEFAULTS.attempts,
    backoffMs: durationMs(p.retry?.backoff ?? TASK_DEFAULTS.backoff),
    backoffMaxMs: durationMs(p.retry?.maxBackoff ?? TASK_DEFAULTS.maxBackoff),
    timeoutMs: durationMs(p.timeout ?? TASK_DEFAULTS.timeout),
    concurrencyKey: p.concurrency?.key ?? null,
    concurrencyLimit: p.concurrency?.limit ?? null,
    rateKey: p.rateLimit?.key ?? null,
    rateLimit: p.rateLimit?.limit ?? null,
    ratePerMs: p.rateLimit ? durationMs(p.rateLimit.per) : null,
    pauseAfterFailures: p.pauseAfter?.failures ?? null,
    pauseAfterWithinMs: p.pauseAfter ? durationMs(p.pauseAfter.within) : null,
    notifyUrl: input.notify?.url ?? null,
    notifyOn: input.notify?.on ?? [...TASK_DEFAULTS.notifyOn],
    labels: input.labels ?? {},
    managedBy: input.managedBy ?? null,
    exclude: snapshots.map((c) => c.name),
    calendars: snapshots as unknown as Prisma.InputJsonValue,
    sloStartWithinMs: input.slo ? durationMs(input.slo.startWithin) : null,
    status: input.paused ? 'paused' : nextRunAt ? 'active' : 'completed',
    nextRunAt,
  };
}

/** The calendars some task specs exclude, each once: what their writer locks for them. */
export function excludedCalendars(specs: { schedule?: { exclude?: string[] } }[]): string[] {
  return [...new Set(specs.flatMap((spec) => spec.schedule?.exclude ?? []))];
}

/**
 * The time library's spec for a schedule as the contract's `ScheduleSpec` parsed it (one kind);
 * `hashKey` seeds `H` in cron; `calendars` hold the ones `exclude` names. Throws `InvalidTaskError`
 * naming the field.
 */
export function scheduleSpecFromInput(
  s: ScheduleInput,
  hashKey: string,
  anchor: Date,
  calendars: Calendar[] = [],
): { spec: ScheduleSpec; runAt: Date | null; everyMs: number | null; snapshots: CalendarSnapshot[] } {
  const kind = scheduleKindsOf(s)[0]!;
  const timezone = s.timezone ?? TASK_DEFAULTS.timezone;
  const startAt = instant(s.startAt);
  const endAt = instant(s.endAt);
  if (startAt && endAt && endAt <= startAt)
    throw new InvalidTaskError('schedule.endAt', 'schedule.endAt must be after schedule.startAt', 'invalid_schedule');
  if (endAt && endAt.getTime() <= anchor.getTime())
    throw new InvalidTaskError(
      'schedule.endAt',
      'schedule.endAt is in the past: the task would never run',
      'invalid_schedule',
    );
  const runAt = kind === 'at' ? parseAt(String(s.at), timezone, s.disambiguation) : null;
  if (runAt && runAt.getTime() <= anchor.getTime())
    throw new InvalidTaskError('schedule.at', 'schedule.at is in the past', 'invalid_schedule');
  const everyMs = kind === 'every' ? durationMs(s.every) : null;
  const snapshots = calendarSnapshots(s.exclude ?? [], calendars);
  const exclude = excludedDaysOf(snapshots, timezone);
  const spec: ScheduleSpec =
    kind === 'cron'
      ? { kind, cron: s.cron!, timezone, hashKey, dst: s.dst, startAt, endAt, exclude }
      : kind === 'rrule'
        ? { kind, rrule: s.rrule!, timezone, anchor, dst: s.dst, startAt, endAt, exclude }
        : kind === 'at'
          ? { kind, runAt: runAt!, timezone, startAt, endAt, exclude }
          : { kind, everyMs: everyMs!, anchor: startAt ?? anchor, timezone, startAt, endAt, exclude };
  return { spec, runAt, everyMs, snapshots };
}

/** The copies of the calendars `names` names, in its order; an unknown or repeated name is refused. */
function calendarSnapshots(names: readonly string[], calendars: Calendar[]): CalendarSnapshot[] {
  const byName = new Map(calendars.map((c) => [c.name, c]));
  return names.map((name, i) => {
    const calendar = byName.get(name);
    if (!calendar)
      throw new InvalidTaskError(
        `schedule.exclude[${i}]`,
        `schedule.exclude[${i}]: no calendar named "${name}"`,
        'unknown_calendar',
      );
    if (names.indexOf(name) !== i)
      throw new InvalidTaskError(
        `schedule.exclude[${i}]`,
        `schedule.exclude[${i}]: "${name}" is named twice`,
        'invalid_schedule',
      );
    return {
      name,
      version: calendar.version,
      updatedAt: calendar.updatedAt.toISOString(),
      timezone: calendar.timezone,
      dates: calendar.dates,
      rrules: calendar.rrules,
    };
  });
}

/** A payload is a JSON object of at most 64 KiB, nested at most 32 levels. */
function checkPayload(payload: unknown): void {
  if (payload === undefined) return;
  if (Buffer.byteLength(JSON.stringify(payload)) > PAYLOAD_MAX_BYTES)
    throw new PayloadTooLargeError(`payload exceeds ${PAYLOAD_MAX_BYTES / 1024} KiB`);
  const depth = (value: unknown): number =>
    value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value as object).map(depth)) : 0;
  if (depth(payload) > PAYLOAD_MAX_DEPTH)
    throw new InvalidTaskError(
      'payload',
      `payload must not nest deeper than ${PAYLOAD_MAX_DEPTH} levels`,
      'invalid_payload',
    );
}

/** A fresh HMAC key for the `http` handler's signature and notifications. */
export function newTaskSecret(): string {
  if (secretPool.length === 0) {
    // One call to the system's randomness for many secrets: a batch of a thousand tasks asks for a thousand.
    const bytes = randomBytes(SECRET_BYTES * SECRETS_PER_DRAW);
    for (let i = 0; i < SECRETS_PER_DRAW; i += 1)
      secretPool.push(bytes.subarray(i * SECRET_BYTES, (i + 1) * SECRET_BYTES).toString('base64url'));
  }
  return secretPool.pop()!;
}

/** A task's HMAC secret: 32 random bytes, drawn a few hundred at a time (each used once). */
const SECRET_BYTES = 32;
const SECRETS_PER_DRAW = 256;
const secretPool: string[] = [];

/** An instant the contract's `Instant` accepted (ISO 8601 with an offset, a real calendar date). */
function instant(value: string | null | undefined): Date | null {
  return value === undefined || value === null ? null : new Date(value);
}
