import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { TaskNameTakenError } from '@punctual/db';
import { CalendarInUseError, CalendarNotFoundError, ExecutionNotFoundError, ExecutionStateError, InvalidBatchError, InvalidTaskError, PayloadTooLargeError, TaskNotFoundError, TaskNotManagedError, VersionConflictError } from '@punctual/tasks';
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
    res.status(error.getStatus()).json(error.getResponse());
  }

  private toApiError(e: unknown): HttpException {
    if (e instanceof ApiError) return e;
    if (e instanceof InvalidScheduleError) return new ApiError(422, 'invalid_schedule', e.message, [{ field: e.field, message: e.message }]);
    if (e instanceof AmbiguousLocalTimeError) return new ApiError(422, 'ambiguous_local_time', e.message, [{ field: e.field, message: e.message }]);
    if (e instanceof InvalidTaskError) return new ApiError(422, e.code, e.message, [{ field: e.field, message: e.message }]);
    if (e instanceof InvalidBatchError) {
      const tooLarge = e.items.some((i) => i.tooLarge);
      const codes = new Set(e.items.map((i) => i.code));
      return new ApiError(tooLarge ? 413 : 422, tooLarge ? 'payload_too_large' : codes.size === 1 ? [...codes][0]! : 'invalid_tasks', e.message, e.items.map(({ field, message }) => ({ field, message })));
    }
    if (e instanceof CalendarInUseError) return new ApiError(409, 'calendar_in_use', e.message, e.tasks.map((t) => ({ field: 'tasks', message: t })));
    if (e instanceof TaskNotFoundError || e instanceof ExecutionNotFoundError || e instanceof CalendarNotFoundError) return new ApiError(404, 'not_found', e.message);
    if (e instanceof PayloadTooLargeError) return new ApiError(413, 'payload_too_large', e.message, [{ field: 'payload', message: e.message }]);
    if (e instanceof TaskNotManagedError) {
      return new ApiError(409, 'not_managed', e.message, e.tasks.map((t) => ({ field: TaskNotManagedError.field(t), message: TaskNotManagedError.describe(t, e.managedBy) })));
    }
    if (e instanceof VersionConflictError) return new ApiError(409, 'version_conflict', e.message);
    if (e instanceof ExecutionStateError) return new ApiError(409, 'invalid_state', e.message);
    if (e instanceof TaskNameTakenError) return new ApiError(409, 'name_taken', e.message, [{ field: 'name', message: e.message }]);
    // Express' body parser errors arrive wrapped in an HttpException, the original as its cause.
    const bodyError = ((e as { cause?: unknown })?.cause ?? e) as { type?: string };
    if (bodyError?.type === 'entity.too.large') return new ApiError(413, 'payload_too_large', 'the request body is too large');
    if (bodyError?.type === 'entity.parse.failed') return new ApiError(400, 'malformed_json', 'the request body is not valid JSON');
    if (e instanceof HttpException) {
      const status = e.getStatus();
      const code = status === 404 ? 'not_found' : status === 413 ? 'payload_too_large' : `http_${status}`;
      return new ApiError(status, code, status === 404 ? 'no such route' : e.message);
    }
    this.logger.error({ err: e }, 'unhandled error');
    return new ApiError(500, 'internal', 'internal error');
  }
}
