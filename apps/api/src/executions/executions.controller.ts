import { Controller, Get, Param, ParseUUIDPipe } from '@nestjs/common';
import { ExecutionNotFoundError, presentEvent, presentExecution } from '@punctual/core';
import { ExecutionsRepository } from '@punctual/db';
import { ApiError } from '../http/api-error.js';

@Controller('v1/executions')
export class ExecutionsController {
  constructor(private readonly executions: ExecutionsRepository) {}

  @Get(':id')
  async get(
    @Param('id', new ParseUUIDPipe({ exceptionFactory: () => new ApiError(404, 'not_found', 'no execution with that id') })) id: string,
  ) {
    const execution = await this.executions.findById(id);
    if (!execution) throw new ExecutionNotFoundError(id);
    return { ...presentExecution(execution), events: execution.events.map(presentEvent) };
  }
}
