import { Controller, Param, ParseUUIDPipe } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import { type Execution, type ExecutionDetail, routes } from '@punctual/contract';
import { ExecutionsService, ExecutionViews, presentExecution } from '@punctual/tasks';
import type { z } from 'zod';
import { CurrentNamespace, CurrentPrincipal } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { Route, ValidQuery } from '../http/route.decorator.js';

const uuid = () =>
  new ParseUUIDPipe({ exceptionFactory: () => new ApiError(404, 'not_found', 'no execution with that id') });

@Controller()
export class ExecutionsController {
  constructor(
    private readonly views: ExecutionViews,
    private readonly service: ExecutionsService,
  ) {}

  @Route(routes.listExecutions)
  list(
    @ValidQuery(routes.listExecutions) query: z.output<typeof routes.listExecutions.query>,
    @CurrentNamespace() namespace: string,
  ) {
    return this.views.list(query, namespace);
  }

  @Route(routes.getExecution)
  get(@Param('id', uuid()) id: string, @CurrentNamespace() namespace: string): Promise<ExecutionDetail> {
    return this.views.detail(id, namespace);
  }

  @Route(routes.retryExecution)
  async retry(@Param('id', uuid()) id: string, @CurrentNamespace() namespace: string): Promise<Execution> {
    return presentExecution(await this.service.retry(id, namespace));
  }

  @Route(routes.cancelExecution)
  async cancel(
    @Param('id', uuid()) id: string,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() actor: Principal,
  ): Promise<Execution> {
    return presentExecution(await this.service.cancel(id, namespace, actor.actor));
  }
}
