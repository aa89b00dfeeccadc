import { Injectable } from '@nestjs/common';
import { ClockService } from '@punctual/clock';
import type { Task as TaskJson, TaskDetail } from '@punctual/contract';
import { ExecutionQueriesRepository, type Task, TaskHealthRepository, TasksRepository } from '@punctual/db';
import { TaskNotFoundError } from './errors.js';
import { upcomingFireTimes } from './schedule-preview.js';
import { presentExecution, presentTask } from './task.presenter.js';

/** Tasks as the API shows them: with their health, and for one task its next slots and last run. */
@Injectable()
export class TaskViews {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly executions: ExecutionQueriesRepository,
    private readonly health: TaskHealthRepository,
    private readonly clock: ClockService,
  ) {}

  /** Each task with its health, read from the executions of all of them at once. */
  async present(tasks: Task[]): Promise<TaskJson[]> {
    const health = await this.health.of(tasks.map((t) => t.id));
    return tasks.map((task) => presentTask(task, health.get(task.id)));
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
    return { ...shown, upcoming: upcomingFireTimes(task, upcoming, now, planned), lastExecution: last ? presentExecution(last) : null };
  }

  /** The instant execution lists cut at (only runs due by then), or undefined when they list planned slots too. */
  dueBy(listsPlanned: boolean): Date | undefined {
    return listsPlanned ? undefined : this.clock.date();
  }

  /** Refuses a name no task has and no execution was recorded under: a deleted task's history outlives it. */
  async assertKnownName(name: string): Promise<void> {
    if (!(await this.tasks.findByName(name)) && !(await this.executions.hasHistoryOfDeleted(name))) throw new TaskNotFoundError(name);
  }
}
