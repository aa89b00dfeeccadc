import { randomBytes } from 'node:crypto';
import type { Prisma } from '@punctual/db';
import { compileSchedule, parseAt, parseDuration, type ScheduleSpec } from '@punctual/time';
import { InvalidTaskError, PayloadTooLargeError } from '../errors.js';
import { type ScheduleInput, TASK_NAME, type TaskInput } from './task-input.js';

/** The columns of a task that a definition sets (everything but cursor, status bookkeeping and ids). */
export type TaskDefinition = Omit<Prisma.TaskCreateInput, 'secret' | 'executions'>;

const MAX_INT = 2_147_483_647;

/**
 * Validates a task's meaning and turns it into columns, with its first slot as the cursor.
 * Throws `InvalidTaskError` or the time library's errors, each naming the field.
 */
export function toTaskDefinition(input: TaskInput, now: Date, anchor: Date = now): TaskDefinition {
  if (!TASK_NAME.test(input.name)) {
    throw new InvalidTaskError('name', 'name must match ^[a-z0-9][a-z0-9._-]{0,127}$', 'invalid_name');
  }
  checkPayload(input.payload);
  const { spec, runAt, everyMs } = scheduleSpecFromInput(input.schedule, input.name, anchor);
  const s = input.schedule;
  const kind = spec.kind;
  const timezone = s.timezone ?? 'UTC';
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
    jitterMs: bounded(s.jitter, 0, 'schedule.jitter'),
    dstGap: s.dst?.gap ?? null,
    dstOverlap: s.dst?.overlap ?? null,
    overlap: p.overlap ?? 'skip',
    misfire: p.misfire ?? 'run_once',
    maxDelayMs: bounded(p.maxDelay, 3_600_000, 'policy.maxDelay'),
    maxAttempts: p.retry?.attempts ?? 3,
    backoffMs: bounded(p.retry?.backoff, 30_000, 'policy.retry.backoff'),
    backoffMaxMs: bounded(p.retry?.maxBackoff, 3_600_000, 'policy.retry.maxBackoff'),
    timeoutMs: bounded(p.timeout, 300_000, 'policy.timeout'),
    notifyUrl: input.notify?.url ?? null,
    notifyOn: input.notify?.on ?? ['dead'],
    status: input.paused ? 'paused' : nextRunAt ? 'active' : 'completed',
    nextRunAt,
  };
}

/**
 * The time library's spec for a schedule as the API receives it; `hashKey` seeds `H` in cron.
 * Throws `InvalidTaskError` naming the field.
 */
export function scheduleSpecFromInput(s: ScheduleInput, hashKey: string, anchor: Date): { spec: ScheduleSpec; runAt: Date | null; everyMs: number | null } {
  const kinds = (['cron', 'rrule', 'at', 'every'] as const).filter((k) => s[k] !== undefined);
  if (kinds.length !== 1) {
    throw new InvalidTaskError('schedule', 'schedule must hold exactly one of cron, rrule, at, every', 'invalid_schedule');
  }
  const kind = kinds[0]!;
  const timezone = s.timezone ?? 'UTC';
  const startAt = instant(s.startAt, 'schedule.startAt');
  const endAt = instant(s.endAt, 'schedule.endAt');
  if (startAt && endAt && endAt <= startAt) throw new InvalidTaskError('schedule.endAt', 'schedule.endAt must be after schedule.startAt', 'invalid_schedule');
  if (endAt && endAt.getTime() <= anchor.getTime()) throw new InvalidTaskError('schedule.endAt', 'schedule.endAt is in the past: the task would never run', 'invalid_schedule');
  const runAt = kind === 'at' ? parseAt(String(s.at), timezone, s.disambiguation) : null;
  if (runAt && runAt.getTime() <= anchor.getTime()) throw new InvalidTaskError('schedule.at', 'schedule.at is in the past', 'invalid_schedule');
  const everyMs = kind === 'every' ? parseDuration(s.every, 'schedule.every') : null;
  const spec: ScheduleSpec =
    kind === 'cron'
      ? { kind, cron: s.cron!, timezone, hashKey, dst: s.dst, startAt, endAt }
      : kind === 'rrule'
        ? { kind, rrule: s.rrule!, timezone, anchor, dst: s.dst, startAt, endAt }
        : kind === 'at'
          ? { kind, runAt: runAt!, timezone, startAt, endAt }
          : { kind, everyMs: everyMs!, anchor: startAt ?? anchor, timezone, startAt, endAt };
  return { spec, runAt, everyMs };
}

const MAX_PAYLOAD_BYTES = 64 * 1024;
const MAX_PAYLOAD_DEPTH = 32;

/** A payload is a JSON object of at most 64 KiB, nested at most 32 levels. */
function checkPayload(payload: unknown): void {
  if (payload === undefined) return;
  if (Buffer.byteLength(JSON.stringify(payload)) > MAX_PAYLOAD_BYTES) throw new PayloadTooLargeError('payload exceeds 64 KiB');
  const depth = (value: unknown): number =>
    value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value as object).map(depth)) : 0;
  if (depth(payload) > MAX_PAYLOAD_DEPTH) throw new InvalidTaskError('payload', `payload must not nest deeper than ${MAX_PAYLOAD_DEPTH} levels`, 'invalid_payload');
}

/** A fresh HMAC key for the `http` handler's signature and notifications. */
export function newTaskSecret(): string {
  return randomBytes(32).toString('base64url');
}

function bounded(value: string | number | undefined, fallback: number, field: string): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value, field);
  if (ms > MAX_INT) throw new InvalidTaskError(field, `${field} must be at most 24d`, 'invalid_duration');
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
