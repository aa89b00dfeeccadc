import { Controller, Param, ParseUUIDPipe } from '@nestjs/common';
import { ClockService } from '@punctual/clock';
import { type Execution, type ExecutionDetail, listsPlanned, routes } from '@punctual/contract';
import { ExecutionQueriesRepository } from '@punctual/db';
import { ExecutionNotFoundError, ExecutionsService, presentEvent, presentExecution } from '@punctual/tasks';
import type { z } from 'zod';
import { ApiError } from '../http/api-error.js';
import { executionPage } from '../http/execution-page.js';
import { Route, ValidQuery } from '../http/route.decorator.js';

const uuid = () => new ParseUUIDPipe({ exceptionFactory: () => new ApiError(404, 'not_found', 'no execution with that id') });

@Controller()
export class ExecutionsController {
  constructor(
    private readonly executions: ExecutionQueriesRepository,
    private readonly service: ExecutionsService,
    private readonly clock: ClockService,
  ) {}

  @Route(routes.listExecutions)
  list(@ValidQuery(routes.listExecutions) query: z.output<typeof routes.listExecutions.query>) {
    const filter = {
      taskName: query.task,
      status: query.status,
      from: query.from ? new Date(query.from) : undefined,
      to: query.to ? new Date(query.to) : undefined,
      dueBy: listsPlanned(query) ? undefined : this.clock.date(),
    };
    return executionPage(this.executions, filter, query.limit, query.cursor);
  }

  @Route(routes.getExecution)
  async get(@Param('id', uuid()) id: string): Promise<ExecutionDetail> {
    const execution = await this.executions.findById(id);
    if (!execution) throw new ExecutionNotFoundError(id);
    return { ...presentExecution(execution), events: execution.events.map(presentEvent) };
  }

  @Route(routes.retryExecution)
  async retry(@Param('id', uuid()) id: string): Promise<Execution> {
    return presentExecution(await this.service.retry(id));
  }

  @Route(routes.cancelExecution)
  async cancel(@Param('id', uuid()) id: string): Promise<Execution> {
    return presentExecution(await this.service.cancel(id));
  }
}
