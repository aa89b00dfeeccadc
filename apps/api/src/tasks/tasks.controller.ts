import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { presentExecution, presentTask, taskSchedule, TasksService } from '@punctual/core';
import { ExecutionsRepository, type Task, TasksRepository } from '@punctual/db';
import { slotsBetween } from '@punctual/time';
import type { Response } from 'express';
import { decodeCursor, encodeCursor, ExecutionPageQuery, TaskListQuery } from '../http/pagination.js';
import { CreateTaskDto, ResumeDto, TaskBodyDto } from './task.dto.js';

const UPCOMING = 5;

@Controller('v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly tasksRepository: TasksRepository,
    private readonly executions: ExecutionsRepository,
  ) {}

  @Get()
  async list(@Query() query: TaskListQuery) {
    const limit = query.limit ?? 50;
    const after = query.cursor ? decodeCursor<{ name: string }>(query.cursor).name : undefined;
    const items = await this.tasksRepository.list({ status: query.status, handler: query.handler, q: query.q }, limit, after);
    const last = items.length === limit ? items[items.length - 1] : undefined;
    return { items: items.map(presentTask), nextCursor: last ? encodeCursor({ name: last.name }) : null };
  }

  @Post()
  async create(@Body() body: CreateTaskDto) {
    const { task, secret } = await this.tasks.create(body);
    return { ...presentTask(task), secret };
  }

  @Put(':name')
  async put(@Param('name') name: string, @Body() body: TaskBodyDto, @Res({ passthrough: true }) res: Response) {
    const { task, created, secret } = await this.tasks.put(name, { ...body, name });
    res.status(created ? 201 : 200);
    return created ? { ...presentTask(task), secret } : presentTask(task);
  }

  @Get(':name')
  async get(@Param('name') name: string) {
    const task = await this.tasks.get(name);
    const lastExecution = await this.executions.lastOfTask(task.id);
    return { ...presentTask(task), upcoming: this.upcoming(task), lastExecution: lastExecution ? presentExecution(lastExecution) : null };
  }

  @Delete(':name')
  @HttpCode(204)
  async remove(@Param('name') name: string): Promise<void> {
    await this.tasks.delete(name);
  }

  @Post(':name/pause')
  @HttpCode(200)
  async pause(@Param('name') name: string) {
    return presentTask(await this.tasks.pause(name));
  }

  @Post(':name/resume')
  @HttpCode(200)
  async resume(@Param('name') name: string, @Body() body: ResumeDto) {
    return presentTask(await this.tasks.resume(name, body.catchUp));
  }

  @Get(':name/executions')
  async executionsOf(@Param('name') name: string, @Query() query: ExecutionPageQuery) {
    const task = await this.tasks.get(name);
    const limit = query.limit ?? 50;
    const after = query.cursor ? decodeCursor<{ s: string; id: string }>(query.cursor) : undefined;
    const items = await this.executions.list({ taskName: task.name, status: query.status }, limit, after && { scheduledFor: new Date(after.s), id: after.id });
    const last = items.length === limit ? items[items.length - 1] : undefined;
    return { items: items.map(presentExecution), nextCursor: last ? encodeCursor({ s: last.scheduledFor.toISOString(), id: last.id }) : null };
  }

  /** The next fire times from the task's cursor (what planning will do next). */
  private upcoming(task: Task): string[] {
    if (task.status !== 'active' || !task.nextRunAt) return [];
    const schedule = taskSchedule(task);
    const first = task.nextRunAt;
    const rest = slotsBetween(schedule, first, new Date(8.64e15), UPCOMING - 1);
    return [first, ...rest].map((d) => d.toISOString());
  }
}
