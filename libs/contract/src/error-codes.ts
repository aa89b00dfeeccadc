import { z } from 'zod';

/**
 * Every `error.code` the API answers (DESIGN §7), by the status it comes with. Callers branch on
 * the code, never on the message: the message is worded for people and may change.
 */
export const ERROR_CODES = [
  // 400: not JSON, too deep, a wrong type, a missing or unknown field, a cursor or If-Match the API never wrote
  'invalid_request',
  'malformed_json',
  'too_deep',
  'invalid_cursor',
  'invalid_if_match',
  // 401, 403, 404
  'unauthenticated',
  'forbidden',
  'not_found',
  // 409
  'name_taken',
  'version_conflict',
  'invalid_state',
  'calendar_in_use',
  'namespace_in_use',
  'not_managed',
  // 413, 415
  'payload_too_large',
  'unsupported_media_type',
  // 422: well-formed, but the meaning is impossible; a batch refused for one reason carries that reason's code
  'validation_failed',
  'invalid_task',
  'invalid_tasks',
  'invalid_name',
  'name_mismatch',
  'duplicate_name',
  'managed_by_mismatch',
  'invalid_schedule',
  'ambiguous_local_time',
  'unknown_calendar',
  'invalid_calendar',
  'invalid_payload',
  'invalid_duration',
  'invalid_range',
  'invalid_text',
  // a backfill of slots older than the history kept; a retention shorter than a task's maxDelay
  'beyond_retention',
  'retention_too_short',
  // 429 (`quota_exceeded`: a namespace's quota; the message names it and its use), 500, 503 (Postgres
  // cannot be reached for now: a restart, a failover; try again)
  'too_many_failures',
  'quota_exceeded',
  'internal',
  'unavailable',
] as const;

export const ErrorCode = z.enum(ERROR_CODES).meta({
  id: 'ErrorCode',
  description: 'what went wrong, for a program to branch on (the message is for people)',
  examples: ['invalid_schedule'],
});

export type ErrorCode = z.infer<typeof ErrorCode>;

/** Whether a value is one of the {@link ERROR_CODES}: what a client checks an answer's code with before trusting its type. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return (ERROR_CODES as readonly unknown[]).includes(value);
}
