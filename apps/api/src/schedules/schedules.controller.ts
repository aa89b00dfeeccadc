import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { PREVIEW_MAX, previewSchedule } from '@punctual/core';
import { Type } from 'class-transformer';
import { IsInt, IsISO8601, IsObject, IsOptional, Max, Min, ValidateNested } from 'class-validator';
import { RequireRole } from '../auth/roles.js';
import { ScheduleDto } from '../tasks/task.dto.js';

export class PreviewDto {
  @ApiProperty({ type: ScheduleDto, example: { cron: '30 2 * * *', timezone: 'Europe/Berlin' } })
  @IsObject() @ValidateNested() @Type(() => ScheduleDto) schedule!: ScheduleDto;
  @ApiPropertyOptional({ example: '2026-03-28T00:00:00Z', description: 'default: now' }) @IsOptional() @IsISO8601({ strict: true }) from?: string;
  @ApiPropertyOptional({ example: 5, maximum: PREVIEW_MAX, default: 10 }) @IsOptional() @IsInt() @Min(1) @Max(PREVIEW_MAX) count?: number;
}

@ApiTags('schedules')
@ApiBearerAuth()
@Controller('v1/schedules')
export class SchedulesController {
  @Post('preview')
  @HttpCode(200)
  @RequireRole('viewer')
  @ApiOperation({ summary: 'Preview fire times', description: 'The next `count` fire times after `from`: `at` in UTC, `local` with the zone offset.' })
  preview(@Body() body: PreviewDto) {
    return { fireTimes: previewSchedule(body.schedule, body.from ? new Date(body.from) : new Date(), body.count ?? 10) };
  }
}
