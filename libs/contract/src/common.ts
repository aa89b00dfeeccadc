import { z } from 'zod';
import { ErrorCode } from './error-codes.js';
import {
  CURSOR_MAX,
  DURATION_MAX_MS,
  DURATION_PATTERN,
  DURATION_UNIT_MS,
  PAGE_LIMIT_DEFAULT,
  PAGE_LIMIT_MAX,
} from './limits.js';

/**
 * Milliseconds of a duration string (`"30s"`) or whole milliseconds; NaN when it is neither.
 * Pure, so the API, the client and the console read durations the same way.
 */
export function durationMs(input: unknown): number {
  if (typeof input === 'number') return Number.isSafeInteger(input) && input >= 0 ? input : NaN;
  if (typeof input !== 'string') return NaN;
  const match = DURATION_PATTERN.exec(input.trim());
  if (!match) return NaN;
  const ms = Math.round(Number(match[1]) * DURATION_UNIT_MS[match[2]!]!);
  return Number.isSafeInteger(ms) ? ms : NaN;
}

/** Milliseconds as the shortest exact duration string (`3600000` → `"1h"`): how the API writes durations back. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNIT_MS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** What a duration must look like, said after the field's name. */
export const DURATION_MESSAGE = 'must be a duration such as "250ms", "30s", "5m", "1h", "7d" or whole milliseconds';

/** A duration as a task stores it: at most {@link DURATION_MAX_MS}. */
export const Duration = z
  .union([z.string().max(32), z.number().int().nonnegative()])
  .refine((value) => !Number.isNaN(durationMs(value)), DURATION_MESSAGE)
  .refine((value) => !(durationMs(value) > DURATION_MAX_MS), 'must be at most 24d')
  .meta({ description: 'a duration: "250ms", "30s", "5m", "1h", "7d", or whole milliseconds', examples: ['30s'] });

/** An instant with its offset: `2026-06-01T07:00:00Z`, `2026-06-01T09:00:00+02:00`. */
export const Instant = z.iso.datetime({
  offset: true,
  error: 'must be an ISO-8601 instant with an offset, e.g. 2026-06-01T07:00:00Z',
});

/** An instant the API writes: always UTC with milliseconds. */
export const Timestamp = z.string().meta({ format: 'date-time', examples: ['2026-06-01T07:00:00.000Z'] });

/**
 * A yes/no query parameter: `true` or `false` in the query string, a boolean from the typed client.
 * Anything else is malformed (400).
 */
export const QueryFlag = z.preprocess(
  (value: boolean | 'true' | 'false') => (value === 'true' ? true : value === 'false' ? false : value),
  z.boolean(),
);

/** A fire time: the instant in UTC and in the schedule's zone. */
export const FireTime = z.object({
  at: Timestamp,
  local: z.string().meta({
    description: "the same instant in the schedule's zone, with its offset",
    examples: ['2026-03-29T09:00:00.000+02:00'],
  }),
});

/** One field of a task that a change (an apply, a version) changes, by its path in the task JSON (`schedule.cron`, `payload.headers.accept`). */
export const FieldChange = z.object({
  field: z.string().meta({ examples: ['schedule.cron'] }),
  before: z.unknown().optional().meta({ description: 'absent when the field is new; null when secret' }),
  after: z.unknown().optional().meta({ description: 'absent when the field goes; null when secret' }),
  secret: z.boolean().meta({ description: 'a payload field named in secretFields: its values are not shown' }),
});

export const ErrorDetail = z.object({ field: z.string(), message: z.string() });

/** Every error the API answers: `{ error: { code, message, details } }` (DESIGN §7). */
export const ErrorEnvelope = z
  .object({
    error: z.object({
      code: ErrorCode,
      message: z.string(),
      details: z.array(ErrorDetail),
    }),
  })
  .meta({ id: 'Error' });

/** A page of a keyset-paginated list: pass `nextCursor` back as `cursor`; null on the last page. */
export const Page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** `limit` and `cursor` of every paginated list. */
export const PageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(PAGE_LIMIT_MAX).default(PAGE_LIMIT_DEFAULT),
  cursor: z
    .string()
    .max(CURSOR_MAX)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be a cursor this API returned')
    .optional(),
});

export type ErrorDetail = z.infer<typeof ErrorDetail>;
export type FireTime = z.infer<typeof FireTime>;
export type FieldChange = z.infer<typeof FieldChange>;
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
export type Page<T> = { items: T[]; nextCursor: string | null };
