import { randomBytes } from 'node:crypto';
import type { Prisma } from '@punctual/db';
import { compileSchedule, parseDuration, type ScheduleSpec } from '@punctual/time';
import { InvalidTaskError } from '../errors.js';
import { TASK_NAME, type TaskInput } from './task-input.js';

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
  const s = input.schedule;
  const kinds = (['cron', 'rrule', 'at', 'every'] as const).filter((k) => s[k] !== undefined);
  if (kinds.length !== 1) {
    throw new InvalidTaskError('schedule', 'schedule must hold exactly one of cron, rrule, at, every', 'invalid_schedule');
  }
  const kind = kinds[0]!;
  const timezone = s.timezone ?? 'UTC';
  const startAt = instant(s.startAt, 'schedule.startAt');
  const endAt = instant(s.endAt, 'schedule.endAt');
  if (startAt && endAt && endAt <= startAt) throw new InvalidTaskError('schedule.endAt', 'schedule.endAt must be after schedule.startAt', 'invalid_schedule');
  const runAt = kind === 'at' ? instant(s.at, 'schedule.at') : null;
  const everyMs = kind === 'every' ? parseDuration(s.every, 'schedule.every') : null;
  const spec: ScheduleSpec =
    kind === 'cron'
      ? { kind, cron: s.cron!, timezone, hashKey: input.name, dst: s.dst, startAt, endAt }
      : kind === 'rrule'
        ? { kind, rrule: s.rrule!, timezone, dst: s.dst, startAt, endAt }
        : kind === 'at'
          ? { kind, runAt: runAt!, startAt, endAt }
          : { kind, everyMs: everyMs!, anchor: startAt ?? anchor, startAt, endAt };
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

function instant(value: string | null | undefined, field: string): Date | null {
  if (value === undefined || value === null) return null;
  const parsed = /(Z|[+-]\d{2}:?\d{2})$/i.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(parsed.getTime())) {
    throw new InvalidTaskError(field, `${field} must be an ISO-8601 instant with an offset, e.g. 2026-06-01T07:00:00Z`, 'invalid_schedule');
  }
  return parsed;
}
