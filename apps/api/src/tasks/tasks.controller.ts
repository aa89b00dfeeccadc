import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type Principal, presentExecution, presentTask, TaskRunsService, taskSchedule, TasksService } from '@punctual/core';
import { ExecutionsRepository, type Task, TasksRepository } from '@punctual/db';
import { slotsBetween } from '@punctual/time';
import type { Response } from 'express';
import { CurrentPrincipal, RequireRole } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { executionPage } from '../http/execution-page.js';
import { decodeCursor, encodeCursor, ExecutionPageQuery, TaskListQuery } from '../http/pagination.js';
import { BackfillDto, CreateTaskDto, PatchTaskDto, ResumeDto, TaskBodyDto, TriggerDto } from './task.dto.js';

const UPCOMING = 5;

@ApiTags('tasks')
@ApiBearerAuth()
@Controller('v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly runs: TaskRunsService,
    private readonly tasksRepository: TasksRepository,
    private readonly executions: ExecutionsRepository,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List tasks', description: 'Keyset-paginated by name: pass nextCursor back as cursor.' })
  async list(@Query() query: TaskListQuery) {
    const limit = query.limit ?? 50;
    const after = query.cursor ? decodeCursor<{ name: string }>(query.cursor).name : undefined;
    const items = await this.tasksRepository.list({ status: query.status, handler: query.handler, q: query.q }, limit, after);
    const last = items.length === limit ? items[items.length - 1] : undefined;
    return { items: items.map(presentTask), nextCursor: last ? encodeCursor({ name: last.name }) : null };
  }

  @Post()
  @ApiOperation({ summary: 'Create a task', description: 'Returns the task with its HMAC `secret`, shown this once. 409 if the name exists.' })
  async create(@Body() body: CreateTaskDto, @CurrentPrincipal() actor: Principal) {
    const { task, secret } = await this.tasks.create(body, actor);
    return { ...presentTask(task), secret };
  }

  @Put(':name')
  @ApiOperation({ summary: 'Create or replace a task', description: '201 when created (with its secret), 200 when replaced.' })
  async put(@Param('name') name: string, @Body() body: TaskBodyDto, @CurrentPrincipal() actor: Principal, @Res({ passthrough: true }) res: Response) {
    if (body.name !== undefined && body.name !== name) throw new ApiError(422, 'name_mismatch', 'name in the body must match the URL', [{ field: 'name', message: 'must match the URL' }]);
    const { task, created, secret } = await this.tasks.put(name, { ...body, name }, actor);
    res.status(created ? 201 : 200);
    return created ? { ...presentTask(task), secret } : presentTask(task);
  }

  @Patch(':name')
  @ApiOperation({ summary: 'Update part of a task', description: 'Send `If-Match: <version>` to refuse (409) if the task changed meanwhile.' })
  async patch(@Param('name') name: string, @Body() body: PatchTaskDto, @CurrentPrincipal() actor: Principal, @Headers('if-match') ifMatch?: string) {
    return presentTask(await this.tasks.patch(name, body, actor, parseIfMatch(ifMatch)));
  }

  @Get(':name')
  @ApiOperation({ summary: 'A task, its next five fire times and its last execution' })
  async get(@Param('name') name: string) {
    const task = await this.tasks.get(name);
    const lastExecution = await this.executions.lastOfTask(task.id);
    return { ...presentTask(task), upcoming: upcoming(task), lastExecution: lastExecution ? presentExecution(lastExecution) : null };
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a task', description: 'Pending executions are cancelled; history is kept.' })
  async remove(@Param('name') name: string, @CurrentPrincipal() actor: Principal): Promise<void> {
    await this.tasks.delete(name, actor);
  }

  @Post(':name/pause')
  @HttpCode(200)
  @RequireRole('operator')
  @ApiOperation({ summary: 'Pause a task', description: 'Planned runs end skipped(paused).' })
  async pause(@Param('name') name: string, @CurrentPrincipal() actor: Principal) {
    return presentTask(await this.runs.pause(name, actor));
  }

  @Post(':name/resume')
  @HttpCode(200)
  @RequireRole('operator')
  @ApiOperation({ summary: 'Resume a task', description: 'catchUp: skip | latest | all — what to do with the slots of the pause.' })
  async resume(@Param('name') name: string, @Body() body: ResumeDto, @CurrentPrincipal() actor: Principal) {
    return presentTask(await this.runs.resume(name, actor, body?.catchUp));
  }

  @Post(':name/trigger')
  @HttpCode(202)
  @RequireRole('operator')
  @ApiOperation({ summary: 'Run a task now', description: 'Optionally with another payload; runs even while the task is paused.' })
  async trigger(@Param('name') name: string, @Body() body: TriggerDto, @CurrentPrincipal() actor: Principal) {
    return presentExecution(await this.runs.trigger(name, actor, body?.payload));
  }

  @Post(':name/backfill')
  @HttpCode(202)
  @RequireRole('operator')
  @ApiOperation({ summary: 'Run past slots', description: 'Plans the slots in [from, to] (at most maxRuns, ≤ 1000) to run now.' })
  async backfill(@Param('name') name: string, @Body() body: BackfillDto, @CurrentPrincipal() actor: Principal) {
    return { planned: await this.runs.backfill(name, actor, new Date(body.from), new Date(body.to), body.maxRuns) };
  }

  @Get(':name/executions')
  @ApiOperation({ summary: "A task's executions, newest first" })
  async executionsOf(@Param('name') name: string, @Query() query: ExecutionPageQuery) {
    const task = await this.tasks.get(name);
    return executionPage(this.executions, { taskName: task.name, status: query.status }, query.limit, query.cursor);
  }
}

/** The next fire times from the task's cursor (what planning will do next). */
function upcoming(task: Task): string[] {
  if (task.status !== 'active' || !task.nextRunAt) return [];
  const rest = slotsBetween(taskSchedule(task), task.nextRunAt, new Date(8.64e15), UPCOMING - 1);
  return [task.nextRunAt, ...rest].map((d) => d.toISOString());
}

function parseIfMatch(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const version = Number(header.replace(/^W\//, '').replace(/"/g, ''));
  if (!Number.isSafeInteger(version) || version < 1) throw new ApiError(400, 'invalid_if_match', 'If-Match must be the task version, e.g. If-Match: 3');
  return version;
}
