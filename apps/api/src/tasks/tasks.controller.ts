import { Controller, Headers, Param, Res } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import { WorkerDirectory } from '@punctual/cluster';
import {
  type BackfillBody,
  type CreatedTask,
  type RollbackBody,
  HORIZON_DEFAULT,
  type TaskChanges as TaskChangesJson,
  type PatchedTask,
  type PauseBody,
  type ResumeBody,
  routes,
  type Task as TaskJson,
  type TaskApplyRequest,
  type TaskApplyResponse,
  type TaskBatchRequest,
  type TaskBatchResponse,
  type TaskDetail,
  type TaskPatch,
  type TaskPutBody,
  type TaskSpec,
  type TriggerBody,
  TASK_NAME_PATTERN,
  TaskName,
  bareName,
  qualifiedName,
  type WrittenTask,
} from '@punctual/contract';
import {
  ExecutionViews,
  missingHandlerWarnings,
  presentExecution,
  TaskApplyService,
  TaskRunsService,
  TasksService,
  TaskVersionsService,
  TaskViews,
  TimelineService,
} from '@punctual/tasks';
import type { Response } from 'express';
import type { z } from 'zod';
import { CurrentNamespace, CurrentPrincipal } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { keyOf } from '../http/names.js';
import { Route, ValidBody, ValidQuery } from '../http/route.decorator.js';

@Controller()
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly applier: TaskApplyService,
    private readonly runs: TaskRunsService,
    private readonly directory: WorkerDirectory,
    private readonly views: TaskViews,
    private readonly executionViews: ExecutionViews,
    private readonly timeline: TimelineService,
    private readonly versions: TaskVersionsService,
  ) {}

  @Route(routes.listTasks)
  async list(
    @ValidQuery(routes.listTasks) query: z.output<typeof routes.listTasks.query>,
    @CurrentNamespace() namespace: string,
  ) {
    const page = await this.views.list(query, namespace);
    return { ...page, items: await this.withWorkers(page.items) };
  }

  @Route(routes.createTask)
  async create(
    @ValidBody(routes.createTask) body: TaskSpec,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() actor: Principal,
  ): Promise<CreatedTask> {
    const { task, secret } = await this.tasks.create(inNamespace(body, namespace), actor);
    return {
      ...(await this.views.presentOne(task)),
      secret,
      warnings: await missingHandlerWarnings(this.directory, [task.handler]),
    };
  }

  @Route(routes.batchTasks)
  async batch(
    @ValidBody(routes.batchTasks) body: TaskBatchRequest,
    @ValidQuery(routes.batchTasks) query: z.output<typeof routes.batchTasks.query>,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() actor: Principal,
  ): Promise<TaskBatchResponse> {
    const dryRun = dryRunOf(query);
    const specs = body.tasks.map((spec) => inNamespace(spec, namespace));
    const results = await this.tasks.batch(specs, actor, dryRun, query.reason);
    const next = dryRun ? new Map<string, string>() : await this.views.nextRuns(results.map((r) => r.task));
    const items = results.map(({ index, task, created, secret, changes }) => ({
      index,
      name: bareName(task.name),
      created,
      version: task.version,
      nextRunAt: dryRun ? (changes?.fireTimes.after[0]?.at ?? null) : (next.get(task.id) ?? null),
      ...(secret ? { secret } : {}),
      ...(changes && { changes }),
    }));
    const created = items.filter((i) => i.created).length;
    return {
      items,
      created,
      replaced: items.length - created,
      warnings: await missingHandlerWarnings(
        this.directory,
        results.map((r) => r.task.handler),
      ),
      ...(dryRun && { dryRun: true as const }),
    };
  }

  @Route(routes.applyTasks)
  async apply(
    @ValidBody(routes.applyTasks) body: TaskApplyRequest,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() actor: Principal,
  ): Promise<TaskApplyResponse> {
    const request = {
      ...body,
      tasks: body.tasks.map((spec) => inNamespace(spec, namespace)),
      calendars: body.calendars?.map((c) => ({ ...c, name: qualifiedName(namespace, c.name) })),
    };
    const { handlers, ...result } = await this.applier.apply(request, actor, namespace);
    return {
      ...result,
      items: result.items.map((item) => ({ ...item, name: bareName(item.name) })),
      calendars: result.calendars.map((item) => ({ ...item, name: bareName(item.name) })),
      warnings: await missingHandlerWarnings(this.directory, handlers),
    };
  }

  @Route(routes.putTask)
  async put(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.putTask) body: TaskPutBody,
    @ValidQuery(routes.putTask) query: z.output<typeof routes.putTask.query>,
    @CurrentPrincipal() actor: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<WrittenTask> {
    // The name comes from the URL, which no body schema checked.
    if (!TaskName.safeParse(bare).success)
      throw new ApiError(422, 'invalid_name', `name must match ${TASK_NAME_PATTERN.source}`, [
        { field: 'name', message: `name must match ${TASK_NAME_PATTERN.source}` },
      ]);
    const name = keyOf(namespace, bare, 'task');
    if (body.name !== undefined && body.name !== bare)
      throw new ApiError(422, 'name_mismatch', 'name in the body must match the URL', [
        { field: 'name', message: 'must match the URL' },
      ]);
    const dryRun = dryRunOf(query);
    const { task, created, secret, changes } = await this.tasks.put(
      name,
      inNamespace({ ...body, name: bare }, namespace),
      actor,
      dryRun,
      query.reason,
    );
    const warnings = await missingHandlerWarnings(this.directory, [task.handler]);
    if (dryRun) return { ...asPreviewed(await this.views.presentOne(task), changes), warnings, dryRun: true, changes };
    res.status(created ? 201 : 200);
    const shown = await this.views.presentOne(task);
    return created ? { ...shown, secret, warnings } : { ...shown, warnings };
  }

  @Route(routes.patchTask)
  async patch(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.patchTask) body: TaskPatch,
    @ValidQuery(routes.patchTask) query: z.output<typeof routes.patchTask.query>,
    @CurrentPrincipal() actor: Principal,
    @Headers('if-match') ifMatch?: string,
  ): Promise<PatchedTask> {
    const name = keyOf(namespace, bare, 'task');
    const dryRun = dryRunOf(query);
    const patch = body.schedule?.exclude
      ? {
          ...body,
          schedule: { ...body.schedule, exclude: body.schedule.exclude.map((c) => qualifiedName(namespace, c)) },
        }
      : body;
    const { task, changes } = await this.tasks.patch(name, patch, actor, parseIfMatch(ifMatch), dryRun, query.reason);
    const shown = await this.views.presentOne(task);
    return dryRun ? { ...asPreviewed(shown, changes), dryRun: true, changes } : shown;
  }

  @Route(routes.getTask)
  async get(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidQuery(routes.getTask) query: z.output<typeof routes.getTask.query>,
  ): Promise<TaskDetail> {
    const name = keyOf(namespace, bare, 'task');
    const [detail] = await this.withWorkers([await this.views.detail(await this.tasks.get(name), query.upcoming)]);
    return detail!;
  }

  /**
   * Each task's health says whether its runs wait for a worker: active, and its handler offered by
   * no live worker. Left out when the worker directory cannot be read.
   */
  private async withWorkers<T extends TaskJson>(items: T[]): Promise<T[]> {
    const offered = await this.directory.handlers().then(
      (handlers) => new Set(handlers.map((h) => h.name)),
      () => null,
    );
    if (!offered) return items;
    return items.map((task) => ({
      ...task,
      health: { ...task.health, waitingForWorker: task.status === 'active' && !offered.has(task.handler) },
    }));
  }

  @Route(routes.deleteTask)
  async remove(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @CurrentPrincipal() actor: Principal,
  ): Promise<void> {
    await this.tasks.delete(keyOf(namespace, bare, 'task'), actor);
  }

  @Route(routes.pauseTask)
  async pause(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.pauseTask) body: PauseBody,
    @CurrentPrincipal() actor: Principal,
  ): Promise<TaskJson> {
    const name = keyOf(namespace, bare, 'task');
    return this.views.presentOne(await this.runs.pause(name, actor, { cancel: body.cancel, note: body.note }));
  }

  @Route(routes.resumeTask)
  async resume(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.resumeTask) body: ResumeBody,
    @CurrentPrincipal() actor: Principal,
  ): Promise<TaskJson> {
    const name = keyOf(namespace, bare, 'task');
    return this.views.presentOne(await this.runs.resume(name, actor, body.catchUp));
  }

  @Route(routes.triggerTask)
  async trigger(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.triggerTask) body: TriggerBody,
    @CurrentPrincipal() actor: Principal,
  ) {
    const name = keyOf(namespace, bare, 'task');
    return presentExecution(await this.runs.trigger(name, actor, body.payload));
  }

  @Route(routes.backfillTask)
  async backfill(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.backfillTask) body: BackfillBody,
    @CurrentPrincipal() actor: Principal,
  ) {
    const name = keyOf(namespace, bare, 'task');
    return { planned: await this.runs.backfill(name, actor, new Date(body.from), new Date(body.to), body.maxRuns) };
  }

  @Route(routes.taskExecutions)
  executionsOf(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidQuery(routes.taskExecutions) query: z.output<typeof routes.taskExecutions.query>,
  ) {
    const name = keyOf(namespace, bare, 'task');
    return this.executionViews.ofTask(name, query);
  }
  @Route(routes.taskVersions)
  versionsOf(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidQuery(routes.taskVersions) query: z.output<typeof routes.taskVersions.query>,
  ) {
    const name = keyOf(namespace, bare, 'task');
    return this.versions.list(name, query.limit, query.cursor);
  }

  @Route(routes.taskVersion)
  versionOf(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @Param('version') version: string,
    @ValidQuery(routes.taskVersion) query: z.output<typeof routes.taskVersion.query>,
  ) {
    const name = keyOf(namespace, bare, 'task');
    const v = Number(version);
    if (!/^\d+$/.test(version) || !Number.isSafeInteger(v) || v < 1)
      throw new ApiError(404, 'not_found', `no version "${version}" of task "${name}"`);
    return this.versions.get(name, v, query.against);
  }

  @Route(routes.rollbackTask)
  async rollback(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidBody(routes.rollbackTask) body: RollbackBody,
    @CurrentPrincipal() actor: Principal,
  ): Promise<WrittenTask> {
    const name = keyOf(namespace, bare, 'task');
    const dryRun = body.dryRun ? { horizon: HORIZON_DEFAULT } : undefined;
    const { task, created, secret, changes } = await this.tasks.rollback(
      name,
      body.version,
      actor,
      dryRun,
      body.reason,
    );
    const warnings = await missingHandlerWarnings(this.directory, [task.handler]);
    if (dryRun) return { ...asPreviewed(await this.views.presentOne(task), changes), warnings, dryRun: true, changes };
    const shown = await this.views.presentOne(task);
    return created ? { ...shown, secret, warnings } : { ...shown, warnings };
  }

  @Route(routes.taskTimeline)
  timelineOf(
    @Param('name') bare: string,
    @CurrentNamespace() namespace: string,
    @ValidQuery(routes.taskTimeline) query: z.output<typeof routes.taskTimeline.query>,
    @CurrentPrincipal() viewer: Principal,
  ) {
    const name = keyOf(namespace, bare, 'task');
    return this.timeline.page(
      name,
      query,
      async () => new Set((await this.directory.handlers()).map((h) => h.name)),
      viewer.namespaces,
    );
  }
}

/** A task as a dry run would leave it: its next run is the first fire time after the change. */
function asPreviewed<T extends TaskJson>(shown: T, changes: TaskChangesJson | undefined): T {
  return { ...shown, nextRunAt: shown.status === 'active' ? (changes?.fireTimes.after[0]?.at ?? null) : null };
}

/** A dry run's reach when the query asks for one (see ChangeQuery), else undefined. */
export function dryRunOf(query: { dryRun?: boolean; horizon?: number } | undefined): { horizon: number } | undefined {
  return query?.dryRun ? { horizon: query.horizon ?? HORIZON_DEFAULT } : undefined;
}

function parseIfMatch(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const version = Number(header.replace(/^W\//, '').replace(/"/g, ''));
  if (!Number.isSafeInteger(version) || version < 1)
    throw new ApiError(400, 'invalid_if_match', 'If-Match must be the task version, e.g. If-Match: 3');
  return version;
}

/**
 * A spec as the namespace stores it: its name and the calendars it excludes as their keys there
 * (`qualifiedName`), so no name of the request can reach another namespace.
 */
function inNamespace<T extends { name: string; schedule: { exclude?: string[] } }>(spec: T, namespace: string): T {
  const key = (name: string) => qualifiedName(namespace, name);
  const { exclude } = spec.schedule;
  return {
    ...spec,
    name: key(spec.name),
    schedule: exclude ? { ...spec.schedule, exclude: exclude.map(key) } : spec.schedule,
  };
}
