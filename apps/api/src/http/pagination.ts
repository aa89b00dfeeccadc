import { Type } from 'class-transformer';
import { IsISO8601, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { ApiError } from './api-error.js';

const EXECUTION_STATUSES = ['scheduled', 'queued', 'running', 'retrying', 'succeeded', 'dead', 'skipped', 'missed', 'cancelled'] as const;

/** Opaque keyset cursors: base64url JSON of the last item's sort key. */
export function encodeCursor(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<T>(cursor: string): T {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as T;
  } catch {
    throw new ApiError(400, 'invalid_cursor', 'cursor is not one this API returned', [{ field: 'cursor', message: 'invalid cursor' }]);
  }
}

class PageQuery {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(500) limit?: number;
  @IsOptional() @IsString() @MaxLength(512) @Matches(/^[A-Za-z0-9_-]+$/) cursor?: string;
}

export class TaskListQuery extends PageQuery {
  @IsOptional() @IsIn(['active', 'paused', 'completed']) status?: 'active' | 'paused' | 'completed';
  @IsOptional() @IsString() @MaxLength(64) handler?: string;
  @IsOptional() @IsString() @MaxLength(128) q?: string;
}

export class ExecutionPageQuery extends PageQuery {
  @IsOptional() @IsIn(EXECUTION_STATUSES) status?: (typeof EXECUTION_STATUSES)[number];
}

export class ExecutionListQuery extends ExecutionPageQuery {
  @IsOptional() @IsString() @MaxLength(128) task?: string;
  @IsOptional() @IsISO8601({ strict: true }) from?: string;
  @IsOptional() @IsISO8601({ strict: true }) to?: string;
}

export class AuditQuery extends PageQuery {
  @IsOptional() @IsString() @MaxLength(128) actor?: string;
  @IsOptional() @IsString() @MaxLength(128) action?: string;
  @IsOptional() @IsString() @MaxLength(256) target?: string;
}
