import { randomBytes } from 'node:crypto';
import type { Calendar, Prisma } from '@punctual/db';
import { type CalendarSnapshot, excludedDaysOf } from '@punctual/planning';
import { DURATION_MAX_MS, DURATION_MESSAGE, durationMs, PAYLOAD_MAX_BYTES, PAYLOAD_MAX_DEPTH, TASK_DEFAULTS, TASK_NAME_PATTERN, type ScheduleSpec as ScheduleInput, type TaskSpec } from '@punctual/contract';
import { compileSchedule, parseAt, type ScheduleSpec } from '@punctual/time';
import { InvalidTaskError, PayloadTooLargeError } from './errors.js';

/** The columns of a task that a definition sets (everything but cursor, status bookkeeping and ids). */
export type TaskDefinition = Omit<Prisma.TaskCreateInput, 'secret' | 'executions'>;

/**
 * Validates a task's meaning and turns it into columns, with its first slot as the cursor.
 * Throws `InvalidTaskError` or the time library's errors, each naming the field.
 *
 * A one-off instant (`schedule.at`) must lie ahead of `now`: created or moved to the past, the task
 * would complete without ever running. `current` is the task being replaced: its own instant, kept
 * as it is, stays valid once it has passed (a later edit of its description, say).
 *
 * `calendars` are the stored calendars the caller found (and locked) for `schedule.exclude`: a name
 * without one is refused; the task keeps a copy of each (see {@link CalendarSnapshot}).
 */
export function toTaskDefinition(input: TaskSpec, now: Date, anchor: Date = now, current: { runAt: Date | null } | null = null, calendars: Calendar[] = []): TaskDefinition {
  if (!TASK_NAME_PATTERN.test(input.name)) {
    throw new InvalidTaskError('name', `name must match ${TASK_NAME_PATTERN.source}`, 'invalid_name');
  }
  checkPayload(input.payload);
  const { spec, runAt, everyMs, snapshots } = scheduleSpecFromInput(input.schedule, input.name, anchor, calendars);
  if (runAt && runAt.getTime() <= now.getTime() && runAt.getTime() !== current?.runAt?.getTime()) {
    throw new InvalidTaskError('schedule.at', 'schedule.at is in the past: a one-off task must be due after it is created or changed', 'invalid_schedule');
  }
  const s = input.schedule;
  const kind = spec.kind;
  const timezone = s.timezone ?? TASK_DEFAULTS.timezone;
  const startAt = spec.startAt ?? null;
  const endAt = spec.endAt ?? null;
  const nextRunAt = compileSchedule(spec).next(now);
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
    jitterMs: bounded(s.jitter ?? TASK_DEFAULTS.jitter, 'schedule.jitter'),
    dstGap: s.dst?.gap ?? null,
    dstOverlap: s.dst?.overlap ?? null,
    overlap: p.overlap ?? TASK_DEFAULTS.overlap,
    misfire: p.misfire ?? TASK_DEFAULTS.misfire,
    maxDelayMs: bounded(p.maxDelay ?? TASK_DEFAULTS.maxDelay, 'policy.maxDelay'),
    maxAttempts: p.retry?.attempts ?? TASK_DEFAULTS.attempts,
    backoffMs: bounded(p.retry?.backoff ?? TASK_DEFAULTS.backoff, 'policy.retry.backoff'),
    backoffMaxMs: bounded(p.retry?.maxBackoff ?? TASK_DEFAULTS.maxBackoff, 'policy.retry.maxBackoff'),
    timeoutMs: bounded(p.timeout ?? TASK_DEFAULTS.timeout, 'policy.timeout'),
    concurrencyKey: p.concurrency?.key ?? null,
    concurrencyLimit: p.concurrency?.limit ?? null,
    rateKey: p.rateLimit?.key ?? null,
    rateLimit: p.rateLimit?.limit ?? null,
    ratePerMs: p.rateLimit ? duration(p.rateLimit.per, 'policy.rateLimit.per') : null,
    notifyUrl: input.notify?.url ?? null,
    notifyOn: input.notify?.on ?? [...TASK_DEFAULTS.notifyOn],
    labels: input.labels ?? {},
    managedBy: input.managedBy ?? null,
    exclude: snapshots.map((c) => c.name),
    calendars: snapshots as unknown as Prisma.InputJsonValue,
    sloStartWithinMs: input.slo ? bounded(input.slo.startWithin, 'slo.startWithin') : null,
    status: input.paused ? 'paused' : nextRunAt ? 'active' : 'completed',
    nextRunAt,
  };
}

/** The calendars some task specs exclude, each once: what their writer locks for them. */
export function excludedCalendars(specs: { schedule?: { exclude?: string[] } }[]): string[] {
  return [...new Set(specs.flatMap((spec) => spec.schedule?.exclude ?? []))];
}

/**
 * The time library's spec for a schedule as the API receives it; `hashKey` seeds `H` in cron;
 * `calendars` hold the ones `exclude` names. Throws `InvalidTaskError` naming the field.
 */
export function scheduleSpecFromInput(
  s: ScheduleInput,
  hashKey: string,
  anchor: Date,
  calendars: Calendar[] = [],
): { spec: ScheduleSpec; runAt: Date | null; everyMs: number | null; snapshots: CalendarSnapshot[] } {
  const kinds = (['cron', 'rrule', 'at', 'every'] as const).filter((k) => s[k] !== undefined);
  if (kinds.length !== 1) {
    throw new InvalidTaskError('schedule', 'schedule must hold exactly one of cron, rrule, at, every', 'invalid_schedule');
  }
  const kind = kinds[0]!;
  // The API validates shapes first; this keeps a wrong type from reaching the parsers all the same.
  for (const field of ['cron', 'rrule', 'at', 'timezone'] as const) {
    if (s[field] !== undefined && typeof s[field] !== 'string') throw new InvalidTaskError(`schedule.${field}`, `schedule.${field} must be a string`, 'invalid_schedule');
  }
  const timezone = s.timezone ?? TASK_DEFAULTS.timezone;
  const startAt = instant(s.startAt, 'schedule.startAt');
  const endAt = instant(s.endAt, 'schedule.endAt');
  if (startAt && endAt && endAt <= startAt) throw new InvalidTaskError('schedule.endAt', 'schedule.endAt must be after schedule.startAt', 'invalid_schedule');
  if (endAt && endAt.getTime() <= anchor.getTime()) throw new InvalidTaskError('schedule.endAt', 'schedule.endAt is in the past: the task would never run', 'invalid_schedule');
  const runAt = kind === 'at' ? parseAt(String(s.at), timezone, s.disambiguation) : null;
  if (runAt && runAt.getTime() <= anchor.getTime()) throw new InvalidTaskError('schedule.at', 'schedule.at is in the past', 'invalid_schedule');
  const everyMs = kind === 'every' ? duration(s.every, 'schedule.every') : null;
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
    if (!calendar) throw new InvalidTaskError(`schedule.exclude[${i}]`, `schedule.exclude[${i}]: no calendar named "${name}"`, 'unknown_calendar');
    if (names.indexOf(name) !== i) throw new InvalidTaskError(`schedule.exclude[${i}]`, `schedule.exclude[${i}]: "${name}" is named twice`, 'invalid_schedule');
    return { name, version: calendar.version, updatedAt: calendar.updatedAt.toISOString(), timezone: calendar.timezone, dates: calendar.dates, rrules: calendar.rrules };
  });
}

/** A payload is a JSON object of at most 64 KiB, nested at most 32 levels. */
function checkPayload(payload: unknown): void {
  if (payload === undefined) return;
  if (Buffer.byteLength(JSON.stringify(payload)) > PAYLOAD_MAX_BYTES) throw new PayloadTooLargeError(`payload exceeds ${PAYLOAD_MAX_BYTES / 1024} KiB`);
  const depth = (value: unknown): number =>
    value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value as object).map(depth)) : 0;
  if (depth(payload) > PAYLOAD_MAX_DEPTH) throw new InvalidTaskError('payload', `payload must not nest deeper than ${PAYLOAD_MAX_DEPTH} levels`, 'invalid_payload');
}

/** A fresh HMAC key for the `http` handler's signature and notifications. */
export function newTaskSecret(): string {
  return randomBytes(32).toString('base64url');
}

function duration(value: unknown, field: string): number {
  const ms = durationMs(value);
  if (Number.isNaN(ms)) throw new InvalidTaskError(field, `${field} ${DURATION_MESSAGE}`, 'invalid_duration');
  return ms;
}

function bounded(value: string | number, field: string): number {
  const ms = duration(value, field);
  if (ms > DURATION_MAX_MS) throw new InvalidTaskError(field, `${field} must be at most 24d`, 'invalid_duration');
  return ms;
}

const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

function instant(value: string | null | undefined, field: string): Date | null {
  if (value === undefined || value === null) return null;
  const match = typeof value === 'string' ? ISO_INSTANT.exec(value) : null;
  const parsed = match ? new Date(value) : new Date(NaN);
  // Date rolls 2026-02-30 over to March: a calendar date must survive the round trip.
  const [, y, mo, d, h, mi, sec] = match ?? [];
  const valid = match && Number(mo) >= 1 && Number(mo) <= 12 && Number(d) <= new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate() && Number(h) < 24 && Number(mi) < 60 && Number(sec ?? 0) < 60;
  if (!valid || Number.isNaN(parsed.getTime())) {
    throw new InvalidTaskError(field, `${field} must be an ISO-8601 instant with an offset, e.g. 2026-06-01T07:00:00Z`, 'invalid_schedule');
  }
  return parsed;
}
