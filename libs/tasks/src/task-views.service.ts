import { Injectable } from '@nestjs/common';
import { ClockService } from '@punctual/clock';
import type { Page, Task as TaskJson, TaskDetail, TaskListQuery } from '@punctual/contract';
import { ExecutionQueriesRepository, type Task, TaskHealthRepository, TasksRepository } from '@punctual/db';
import type { z } from 'zod';
import { decodeCursor, nextCursor } from './page-cursor.js';
import { upcomingFireTimes } from './schedule-preview.js';
import { presentExecution, presentTask } from './task.presenter.js';

/** Tasks as the API lists and shows them: with their health, and for one task its next slots and last run. */
@Injectable()
export class TaskViews {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionQueriesRepository,
    private readonly health: TaskHealthRepository,
    private readonly clock: ClockService,
  ) {}

  /** Each task with its health and its next run, read from the executions of all of them at once. */
  async present(tasks: Task[]): Promise<TaskJson[]> {
    const [health, next] = await Promise.all([this.health.of(tasks.map((t) => t.id)), this.nextRuns(tasks)]);
    return tasks.map((task) => presentTask(task, health.get(task.id), next.get(task.id) ?? null));
  }

  /**
   * Each task's next run: the first slot its `upcoming` would list — a slot planned and not yet
   * fired, else the schedule's next from the cursor — not the planner's cursor, which runs a
   * moment ahead of it. Null while paused, once completed, or when no slot is left.
   */
  async nextRuns(tasks: Task[]): Promise<Map<string, string | null>> {
    const now = this.clock.date();
    const planned = await this.executions.firstPlannedSlots(
      tasks.map((t) => t.id),
      now,
    );
    return new Map(
      tasks.map((task) => {
        const slot = planned.get(task.id);
        return [task.id, upcomingFireTimes(task, 1, now, slot ? [slot] : [])[0] ?? null];
      }),
    );
  }

  async presentOne(task: Task): Promise<TaskJson> {
    return (await this.present([task]))[0]!;
  }

  /** `GET /v1/tasks/{name}`: one instant cuts both lists — a slot is upcoming or, once due, a candidate for the last run. */
  async detail(task: Task, upcoming: number): Promise<TaskDetail> {
    const now = this.clock.date();
    const [shown, last, planned] = await Promise.all([
      this.presentOne(task),
      this.executions.lastDueOfTask(task.id, now),
      this.executions.plannedSlotsOfTask(task.id, now, task.jitterMs, upcoming),
    ]);
    return {
      ...shown,
      upcoming: upcomingFireTimes(task, upcoming, now, planned),
      lastExecution: last ? presentExecution(last) : null,
    };
  }

  /** `GET /v1/tasks`: a page of tasks by name, filtered, each with its health. */
  async list(query: z.output<typeof TaskListQuery>, namespace: string): Promise<Page<TaskJson>> {
    const after = query.cursor ? decodeCursor<{ name: string }>(query.cursor, 'name').name : undefined;
    const filter = {
      namespace,
      status: query.status,
      handler: query.handler,
      q: query.q,
      labels: labelsOf(query.label ?? []),
      managedBy: query.managedBy,
      health: query.health,
    };
    const items = await this.tasks.list(filter, query.limit, after);
    return { items: await this.present(items), nextCursor: nextCursor(items, query.limit, (t) => ({ name: t.name })) };
  }
}

/** `team=billing` selectors (the contract checked each is `key=value`) as the labels a task must carry: `{ team: 'billing' }`. */
function labelsOf(selectors: string[]): Record<string, string> {
  return Object.fromEntries(
    selectors.map((selector) => [selector.slice(0, selector.indexOf('=')), selector.slice(selector.indexOf('=') + 1)]),
  );
}
