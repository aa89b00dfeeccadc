import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { ErrorCode } from '@punctual/contract';
import { isConnectionError, NamespaceGoneError, QuotaExceededError, TaskNameTakenError } from '@punctual/db';
import {
  CalendarInUseError,
  ExecutionStateError,
  InvalidBatchError,
  InvalidCursorError,
  InvalidTaskError,
  ManagedElsewhereError,
  NotFoundError,
  PayloadTooLargeError,
  TaskNotManagedError,
  VersionConflictError,
} from '@punctual/tasks';
import { AmbiguousLocalTimeError, InvalidScheduleError } from '@punctual/time';
import type { Response } from 'express';
import { ApiError } from './api-error.js';

/**
 * The one place where domain errors become HTTP: each maps to a status and a stable code. Anything
 * unexpected is logged and answered with a plain 500, never a stack trace.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger(ErrorFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const error = this.toApiError(exception);
    // The database restarting or failing over: a client may try again in a few seconds.
    if (error.getStatus() === 503) res.setHeader('Retry-After', String(RETRY_AFTER_S));
    res.status(error.getStatus()).json(error.getResponse());
  }

  private toApiError(e: unknown): HttpException {
    if (e instanceof ApiError) return e;
    if (e instanceof InvalidScheduleError)
      return new ApiError(422, 'invalid_schedule', e.message, [{ field: e.field, message: e.message }]);
    if (e instanceof AmbiguousLocalTimeError)
      return new ApiError(422, 'ambiguous_local_time', e.message, [{ field: e.field, message: e.message }]);
    if (e instanceof InvalidTaskError)
      return new ApiError(422, e.code, e.message, [{ field: e.field, message: e.message }]);
    if (e instanceof InvalidBatchError) {
      const tooLarge = e.items.some((i) => i.tooLarge);
      const codes = new Set(e.items.map((i) => i.code));
      return new ApiError(
        tooLarge ? 413 : 422,
        tooLarge ? 'payload_too_large' : codes.size === 1 ? [...codes][0]! : 'invalid_tasks',
        e.message,
        e.items.map(({ field, message }) => ({ field, message })),
      );
    }
    if (e instanceof CalendarInUseError)
      return new ApiError(
        409,
        'calendar_in_use',
        e.message,
        e.tasks.map((t) => ({ field: 'tasks', message: t })),
      );
    if (e instanceof NotFoundError) return new ApiError(404, 'not_found', e.message);
    if (e instanceof PayloadTooLargeError)
      return new ApiError(413, 'payload_too_large', e.message, [{ field: 'payload', message: e.message }]);
    if (e instanceof TaskNotManagedError) {
      return new ApiError(
        409,
        'not_managed',
        e.message,
        e.tasks.map((t) => ({
          field: TaskNotManagedError.field(t),
          message: TaskNotManagedError.describe(t, e.managedBy),
        })),
      );
    }
    if (e instanceof ManagedElsewhereError)
      return new ApiError(409, 'not_managed', e.message, [{ field: 'managedBy', message: e.message }]);
    if (e instanceof VersionConflictError) return new ApiError(409, 'version_conflict', e.message);
    if (e instanceof ExecutionStateError) return new ApiError(409, 'invalid_state', e.message);
    if (e instanceof NamespaceGoneError) return new ApiError(404, 'not_found', e.message);
    if (e instanceof QuotaExceededError)
      return new ApiError(429, 'quota_exceeded', e.message, [
        { field: 'quotas.maxTasks', message: `used ${e.used} of ${e.limit}; this request adds ${e.adding}` },
      ]);
    if (e instanceof TaskNameTakenError)
      return new ApiError(409, 'name_taken', e.message, [{ field: 'name', message: e.message }]);
    if (e instanceof InvalidCursorError)
      return new ApiError(400, 'invalid_cursor', e.message, [{ field: 'cursor', message: 'invalid cursor' }]);
    // Express' body parser errors arrive wrapped in an HttpException, the original as its cause.
    const bodyError = ((e as { cause?: unknown })?.cause ?? e) as { type?: string; message?: string; body?: unknown };
    if (bodyError?.type === 'entity.too.large')
      return new ApiError(413, 'payload_too_large', 'the request body is too large');
    if (bodyError?.type === 'entity.parse.failed')
      return new ApiError(400, 'malformed_json', malformedJsonMessage(bodyError));
    if (e instanceof HttpException) {
      const status = e.getStatus();
      return new ApiError(status, codeOfStatus(status), status === 404 ? 'no such route' : e.message);
    }
    if (isConnectionError(e)) {
      this.logger.warn({ err: e }, 'the database cannot be reached');
      return new ApiError(
        503,
        'unavailable',
        'the database cannot be reached right now (a restart or a failover); try again shortly',
      );
    }
    this.logger.error({ err: e }, 'unhandled error');
    return new ApiError(500, 'internal', 'internal error');
  }
}

/** What a 503 asks a client to wait before trying again, in seconds. */
const RETRY_AFTER_S = 5;

/** The codes of the statuses Nest and Express answer on their own: an unknown route, an unsupported charset or encoding. */
const STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  400: 'invalid_request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/** The code of an error that came with a status alone. */
function codeOfStatus(status: number): ErrorCode {
  return STATUS_CODES[status] ?? (status < 500 ? 'invalid_request' : 'internal');
}

/**
 * Bodies up to this many characters are parsed again to place a mistake V8 does not: some twenty
 * parses of at most this much, before any key is checked, stay cheap; of a batch's megabytes not.
 */
const SEARCHED_MAX_CHARS = 256 * 1024;

/**
 * `the request body is not valid JSON at line 3, column 3: expected ',' or '}' after property value`.
 * The body parser keeps the text it failed on and JSON.parse's message. V8 states the position of
 * most mistakes; for the others (an unexpected token), the shortest start of the body that
 * JSON.parse refuses before its end ends at the mistake (a start refused so stays refused when longer).
 */
function malformedJsonMessage(error: { message?: string; body?: unknown }): string {
  const text = typeof error.body === 'string' ? error.body : undefined;
  const message = error.message ?? '';
  if (text === undefined) return 'the request body is not valid JSON';
  const positionIn = (said: string) => {
    const match = /at position (\d+)/.exec(said);
    return match ? Number(match[1]) : undefined;
  };
  /** Where JSON.parse refuses the first `end` characters before their end, or null. */
  const refusedAt = (end: number): number | null => {
    try {
      JSON.parse(text.slice(0, end));
      return null;
    } catch (parseError) {
      const said = (parseError as Error).message;
      const at = positionIn(said) ?? end - 1;
      return said.startsWith('Unexpected end of JSON input') || at >= end ? null : at;
    }
  };
  let reason = message
    .replace(/ in JSON at position \d+.*$/, '')
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/^./, (c) => c.toLowerCase());
  let offset = positionIn(message);
  if (message.startsWith('Unexpected end of JSON input'))
    [offset, reason] = [text.length, 'the body ends before its JSON does'];
  else if (offset === undefined && text.length <= SEARCHED_MAX_CHARS) {
    // JSON the body parser refused all the same: not an object or a list.
    if (refusedAt(text.length) === null)
      [offset, reason] = [Math.max(0, text.search(/\S/)), 'the body must be a JSON object'];
    else {
      let [low, high] = [1, text.length];
      while (low < high) {
        const middle = Math.floor((low + high) / 2);
        if (refusedAt(middle) === null) low = middle + 1;
        else high = middle;
      }
      offset = refusedAt(low) ?? low - 1;
    }
  }
  if (offset === undefined) return `the request body is not valid JSON: ${reason}`;
  const lines = text.slice(0, offset).split('\n');
  return `the request body is not valid JSON at line ${lines.length}, column ${lines.at(-1)!.length + 1}: ${reason}`;
}
