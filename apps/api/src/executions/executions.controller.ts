import { Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ExecutionNotFoundError, ExecutionsService, presentEvent, presentExecution } from '@punctual/core';
import { ExecutionsRepository } from '@punctual/db';
import { RequireRole } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { decodeCursor, encodeCursor, ExecutionListQuery } from '../http/pagination.js';

const uuid = () => new ParseUUIDPipe({ exceptionFactory: () => new ApiError(404, 'not_found', 'no execution with that id') });

@ApiTags('executions')
@ApiBearerAuth()
@Controller('v1/executions')
export class ExecutionsController {
  constructor(
    private readonly executions: ExecutionsRepository,
    private readonly service: ExecutionsService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Executions across tasks, newest first', description: '`status=dead` is the dead letter.' })
  async list(@Query() query: ExecutionListQuery) {
    const limit = query.limit ?? 50;
    const after = query.cursor ? decodeCursor<{ s: string; id: string }>(query.cursor) : undefined;
    const items = await this.executions.list(
      { taskName: query.task, status: query.status, from: query.from ? new Date(query.from) : undefined, to: query.to ? new Date(query.to) : undefined },
      limit,
      after && { scheduledFor: new Date(after.s), id: after.id },
    );
    const last = items.length === limit ? items[items.length - 1] : undefined;
    return { items: items.map(presentExecution), nextCursor: last ? encodeCursor({ s: last.scheduledFor.toISOString(), id: last.id }) : null };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One execution and its history of state changes' })
  async get(@Param('id', uuid()) id: string) {
    const execution = await this.executions.findById(id);
    if (!execution) throw new ExecutionNotFoundError(id);
    return { ...presentExecution(execution), events: execution.events.map(presentEvent) };
  }

  @Post(':id/retry')
  @HttpCode(202)
  @RequireRole('operator')
  @ApiOperation({ summary: 'Replay a dead execution' })
  async retry(@Param('id', uuid()) id: string) {
    return presentExecution(await this.service.retry(id));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @RequireRole('operator')
  @ApiOperation({ summary: 'Cancel a pending or running execution' })
  async cancel(@Param('id', uuid()) id: string) {
    return presentExecution(await this.service.cancel(id));
  }
}
