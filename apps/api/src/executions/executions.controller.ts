import { Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ExecutionNotFoundError, ExecutionsService, presentEvent, presentExecution } from '@punctual/core';
import { ExecutionsRepository } from '@punctual/db';
import { RequireRole } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { executionPage } from '../http/execution-page.js';
import { ExecutionListQuery } from '../http/pagination.js';

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
  list(@Query() query: ExecutionListQuery) {
    const filter = { taskName: query.task, status: query.status, from: query.from ? new Date(query.from) : undefined, to: query.to ? new Date(query.to) : undefined };
    return executionPage(this.executions, filter, query.limit, query.cursor);
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
