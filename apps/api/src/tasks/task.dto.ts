import type { PolicyInput, ScheduleInput, TaskInput } from '@punctual/core';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
  ValidateIf,
} from 'class-validator';
import { IsDuration } from '../http/is-duration.js';

class DstDto {
  @IsOptional() @IsIn(['shift', 'skip', 'end']) gap?: 'shift' | 'skip' | 'end';
  @IsOptional() @IsIn(['first', 'last', 'both']) overlap?: 'first' | 'last' | 'both';
}

export class ScheduleDto implements ScheduleInput {
  @IsOptional() @IsString() @MaxLength(256) cron?: string;
  @IsOptional() @IsString() @MaxLength(4096) rrule?: string;
  @IsOptional() @IsString() @MaxLength(64) at?: string;
  @IsOptional() @IsDuration() every?: string | number;
  @IsOptional() @IsString() @MaxLength(64) timezone?: string;
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsString() @MaxLength(64) startAt?: string | null;
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsString() @MaxLength(64) endAt?: string | null;
  @IsOptional() @IsDuration() jitter?: string | number;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => DstDto) dst?: DstDto;
  @IsOptional() @IsIn(['earlier', 'later', 'compatible']) disambiguation?: 'earlier' | 'later' | 'compatible';
}

class RetryDto {
  @IsOptional() @IsInt() @Min(1) @Max(100) attempts?: number;
  @IsOptional() @IsDuration() backoff?: string | number;
  @IsOptional() @IsDuration() maxBackoff?: string | number;
}

export class PolicyDto implements PolicyInput {
  @IsOptional() @IsIn(['skip', 'allow', 'buffer_one', 'replace']) overlap?: 'skip' | 'allow' | 'buffer_one' | 'replace';
  @IsOptional() @IsIn(['run_once', 'skip', 'run_all']) misfire?: 'run_once' | 'skip' | 'run_all';
  @IsOptional() @IsDuration() maxDelay?: string | number;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => RetryDto) retry?: RetryDto;
  @IsOptional() @IsDuration() timeout?: string | number;
}

class NotifyDto {
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsString() @MaxLength(2048) @Matches(/^https?:\/\//, { message: 'notify.url must be an http(s) URL' })
  url?: string | null;
  @IsOptional() @IsArray() @ArrayMaxSize(3) @IsIn(['succeeded', 'failed', 'dead'], { each: true }) on?: string[];
}

/** The body of `PUT /v1/tasks/:name` (the name comes from the URL). */
export class TaskBodyDto implements Omit<TaskInput, 'name'> {
  @IsOptional() @IsString() @MaxLength(128) name?: string;
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsString() @MaxLength(4096) description?: string | null;
  @IsString() @Matches(/^[a-z][a-z0-9._-]{0,63}$/, { message: 'handler must be a handler name such as "http" or "noop"' }) handler!: string;
  @IsOptional() @IsObject() payload?: Record<string, unknown>;
  @IsOptional() @IsArray() @ArrayMaxSize(100) @IsString({ each: true }) secretFields?: string[];
  @IsObject() @ValidateNested() @Type(() => ScheduleDto) schedule!: ScheduleDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => PolicyDto) policy?: PolicyDto;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => NotifyDto) notify?: NotifyDto;
  @IsOptional() @IsBoolean() paused?: boolean;
}

/** The body of `POST /v1/tasks`. */
export class CreateTaskDto extends TaskBodyDto implements TaskInput {
  @IsString() @Matches(/^[a-z0-9][a-z0-9._-]{0,127}$/, { message: 'name must match ^[a-z0-9][a-z0-9._-]{0,127}$' })
  declare name: string;
}

/** The body of `POST /v1/tasks/:name/resume`. */
export class ResumeDto {
  @IsOptional() @IsIn(['skip', 'latest', 'all']) catchUp?: 'skip' | 'latest' | 'all';
}
