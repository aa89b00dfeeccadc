import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import type { PolicyInput, ScheduleInput, TaskInput } from '@punctual/core';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { IsDuration } from '../http/is-duration.js';

const DURATION = { oneOf: [{ type: 'string', example: '30s' }, { type: 'integer', example: 30000 }] };

class DstDto {
  @ApiPropertyOptional({ enum: ['shift', 'skip', 'end'] }) @IsOptional() @IsIn(['shift', 'skip', 'end']) gap?: 'shift' | 'skip' | 'end';
  @ApiPropertyOptional({ enum: ['first', 'last', 'both'] }) @IsOptional() @IsIn(['first', 'last', 'both']) overlap?: 'first' | 'last' | 'both';
}

export class ScheduleDto implements ScheduleInput {
  @ApiPropertyOptional({ example: '0 9 * * 1-5', description: '5 or 6 fields (seconds first)' }) @IsOptional() @IsString() @MaxLength(256) cron?: string;
  @ApiPropertyOptional({ example: 'DTSTART;TZID=Europe/Berlin:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO' }) @IsOptional() @IsString() @MaxLength(4096) rrule?: string;
  @ApiPropertyOptional({ example: '2026-06-01T07:00:00Z', description: 'an instant, or a local time with timezone' }) @IsOptional() @IsString() @MaxLength(64) at?: string;
  @ApiPropertyOptional({ ...DURATION, description: 'a fixed interval, e.g. "15m"' }) @IsOptional() @IsDuration() every?: string | number;
  @ApiPropertyOptional({ example: 'Europe/Berlin', default: 'UTC' }) @IsOptional() @IsString() @MaxLength(64) timezone?: string;
  @ApiPropertyOptional({ nullable: true, example: null }) @IsOptional() @ValidateIf((_, v) => v !== null) @IsISO8601({ strict: true }) @MaxLength(64) startAt?: string | null;
  @ApiPropertyOptional({ nullable: true, example: null }) @IsOptional() @ValidateIf((_, v) => v !== null) @IsISO8601({ strict: true }) @MaxLength(64) endAt?: string | null;
  @ApiPropertyOptional({ ...DURATION, description: 'deterministic delay in [0, jitter)' }) @IsOptional() @IsDuration() jitter?: string | number;
  @ApiPropertyOptional({ type: DstDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => DstDto) dst?: DstDto;
  @ApiPropertyOptional({ enum: ['earlier', 'later', 'compatible'] }) @IsOptional() @IsIn(['earlier', 'later', 'compatible']) disambiguation?: 'earlier' | 'later' | 'compatible';
}

class RetryDto {
  @ApiPropertyOptional({ example: 3 }) @IsOptional() @IsInt() @Min(1) @Max(100) attempts?: number;
  @ApiPropertyOptional(DURATION) @IsOptional() @IsDuration() backoff?: string | number;
  @ApiPropertyOptional({ ...DURATION, example: '1h' }) @IsOptional() @IsDuration() maxBackoff?: string | number;
}

export class PolicyDto implements PolicyInput {
  @ApiPropertyOptional({ enum: ['skip', 'allow', 'buffer_one', 'replace'], default: 'skip' }) @IsOptional() @IsIn(['skip', 'allow', 'buffer_one', 'replace']) overlap?: 'skip' | 'allow' | 'buffer_one' | 'replace';
  @ApiPropertyOptional({ enum: ['run_once', 'skip', 'run_all'], default: 'run_once' }) @IsOptional() @IsIn(['run_once', 'skip', 'run_all']) misfire?: 'run_once' | 'skip' | 'run_all';
  @ApiPropertyOptional({ ...DURATION, example: '1h' }) @IsOptional() @IsDuration() maxDelay?: string | number;
  @ApiPropertyOptional({ type: RetryDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => RetryDto) retry?: RetryDto;
  @ApiPropertyOptional({ ...DURATION, example: '5m' }) @IsOptional() @IsDuration() timeout?: string | number;
}

class NotifyDto {
  @ApiPropertyOptional({ nullable: true, example: 'https://example.com/punctual-events' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsString() @MaxLength(2048) @Matches(/^https?:\/\//, { message: 'notify.url must be an http(s) URL' })
  url?: string | null;
  @ApiPropertyOptional({ example: ['dead'], enum: ['succeeded', 'failed', 'dead'], isArray: true })
  @IsOptional() @IsArray() @ArrayMaxSize(3) @IsIn(['succeeded', 'failed', 'dead'], { each: true }) on?: string[];
}

/** Every field of a task but its name. */
export class TaskFieldsDto implements Omit<TaskInput, 'name'> {
  @ApiPropertyOptional({ nullable: true, example: 'Sends the nightly report' }) @IsOptional() @ValidateIf((_, v) => v !== null) @IsString() @MaxLength(4096) description?: string | null;
  @ApiProperty({ example: 'http' }) @IsString() @Matches(/^[a-z][a-z0-9._-]{0,63}$/, { message: 'handler must be a handler name such as "http" or "noop"' }) handler!: string;
  @ApiPropertyOptional({ example: { url: 'https://example.com/hook', method: 'POST' } }) @IsOptional() @IsObject() payload?: Record<string, unknown>;
  @ApiPropertyOptional({ example: ['headers.authorization'], description: 'payload fields never logged or shown' }) @IsOptional() @IsArray() @ArrayMaxSize(100) @IsString({ each: true }) @MaxLength(256, { each: true }) secretFields?: string[];
  @ApiProperty({ type: ScheduleDto }) @IsObject() @ValidateNested() @Type(() => ScheduleDto) schedule!: ScheduleDto;
  @ApiPropertyOptional({ type: PolicyDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => PolicyDto) policy?: PolicyDto;
  @ApiPropertyOptional({ type: NotifyDto }) @IsOptional() @IsObject() @ValidateNested() @Type(() => NotifyDto) notify?: NotifyDto;
  @ApiPropertyOptional({ example: false }) @IsOptional() @IsBoolean() paused?: boolean;
}

/** The body of `PUT /v1/tasks/:name` (the name comes from the URL; if given it must match). */
export class TaskBodyDto extends TaskFieldsDto {
  @ApiPropertyOptional({ example: 'nightly-report' }) @IsOptional() @IsString() @MaxLength(128) name?: string;
}

/** The body of `POST /v1/tasks`. */
export class CreateTaskDto extends TaskFieldsDto implements TaskInput {
  @ApiProperty({ example: 'nightly-report', pattern: '^[a-z0-9][a-z0-9._-]{0,127}$' })
  @IsString() @Matches(/^[a-z0-9][a-z0-9._-]{0,127}$/, { message: 'name must match ^[a-z0-9][a-z0-9._-]{0,127}$' })
  declare name: string;
}

/** The body of `PATCH /v1/tasks/:name`: any subset of a task. */
export class PatchTaskDto extends PartialType(TaskFieldsDto) {}

/** The body of `POST /v1/tasks/:name/resume`. */
export class ResumeDto {
  @ApiPropertyOptional({ enum: ['skip', 'latest', 'all'], example: 'latest', description: 'what to do with the slots of the pause' })
  @IsOptional() @IsIn(['skip', 'latest', 'all']) catchUp?: 'skip' | 'latest' | 'all';
}

/** The body of `POST /v1/tasks/:name/trigger`. */
export class TriggerDto {
  @ApiPropertyOptional({ example: { reason: 'manual re-run' }, description: 'replaces the task payload for this run' })
  @IsOptional() @IsObject() payload?: Record<string, unknown>;
}

/** The body of `POST /v1/tasks/:name/backfill`. */
export class BackfillDto {
  @ApiProperty({ example: '2026-06-01T00:00:00Z' }) @IsISO8601({ strict: true }) from!: string;
  @ApiProperty({ example: '2026-06-07T00:00:00Z' }) @IsISO8601({ strict: true }) to!: string;
  @ApiPropertyOptional({ example: 100, maximum: 1000 }) @IsOptional() @IsInt() @Min(1) @Max(1000) maxRuns?: number;
}
