import { Injectable } from '@nestjs/common';
import { ClockService } from '@punctual/clock';
import {
  type ExecutionDetail,
  type ExecutionListQuery,
  listsPlanned,
  type Page,
  type Execution as ExecutionJson,
  qualifiedName,
  splitQualifiedName,
  type TaskExecutionsQuery,
} from '@punctual/contract';
import { type ExecutionFilter, ExecutionQueriesRepository, TasksRepository } from '@punctual/db';
import type { z } from 'zod';
import { InvalidCursorError, NotFoundError } from './errors.js';
import { decodeCursor, nextCursor } from './page-cursor.js';
import { presentEvent, presentExecution } from './task.presenter.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Executions as the API lists and shows them: pages newest first, one with its history. */
@Injectable()
export class ExecutionViews {
  constructor(
    private readonly executions: ExecutionQueriesRepository,
    private readonly tasks: TasksRepository,
    private readonly clock: ClockService,
  ) {}

  /** `GET /v1/executions`: only the due ones unless the query lists the planned ones too. */
  list(query: z.output<typeof ExecutionListQuery>, namespace: string): Promise<Page<ExecutionJson>> {
    const filter = {
      namespace,
      taskName: query.task && qualifiedName(namespace, query.task),
      status: query.status,
      from: query.from ? new Date(query.from) : undefined,
      to: query.to ? new Date(query.to) : undefined,
    };
    return this.page({ ...filter, dueBy: this.dueBy(query) }, query.limit, query.cursor);
  }

  /**
   * `GET /v1/tasks/{name}/executions` (`name`: the task's key). A deleted task's history is read by
   * its name: the name is unknown (404) only if no task and no execution has it.
   */
  async ofTask(name: string, query: z.output<typeof TaskExecutionsQuery>): Promise<Page<ExecutionJson>> {
    const page = await this.page(
      { namespace: splitQualifiedName(name).namespace, taskName: name, status: query.status, dueBy: this.dueBy(query) },
      query.limit,
      query.cursor,
    );
    if (
      page.items.length === 0 &&
      !(await this.tasks.findByName(name)) &&
      !(await this.executions.hasHistoryOfDeleted(name))
    )
      throw new NotFoundError('task', name);
    return page;
  }

  /** `GET /v1/executions/{id}`: the execution and its events. */
  async detail(id: string, namespace: string): Promise<ExecutionDetail> {
    const execution = await this.executions.findById(id);
    if (!execution || execution.namespace !== namespace) throw new NotFoundError('execution', id);
    return { ...presentExecution(execution), events: execution.events.map(presentEvent) };
  }

  /** The instant the lists cut at (only runs due by then), or undefined when they list planned slots too. */
  private dueBy(query: Parameters<typeof listsPlanned>[0]): Date | undefined {
    return listsPlanned(query) ? undefined : this.clock.date();
  }

  /** One page, newest first, keyset-paginated by (slot, id). */
  private async page(filter: ExecutionFilter, limit: number, cursor?: string): Promise<Page<ExecutionJson>> {
    const after = cursor ? decodeCursor<{ s: string; id: string }>(cursor, 's', 'id') : undefined;
    const scheduledFor = after && new Date(after.s);
    if (after && (Number.isNaN(scheduledFor!.getTime()) || !UUID.test(after.id))) throw new InvalidCursorError();
    const items = await this.executions.list(filter, limit, after && { scheduledFor: scheduledFor!, id: after.id });
    return {
      items: items.map(presentExecution),
      nextCursor: nextCursor(items, limit, (e) => ({ s: e.scheduledFor.toISOString(), id: e.id })),
    };
  }
}
