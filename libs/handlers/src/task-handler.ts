import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { TaskExecution } from '@punctual/db';
import type { HandlerTask, RequestSigner } from './handler-task.js';

export const TASK_HANDLER_METADATA = 'punctual:task-handler';

/** What a handler may log: structured, with the execution's ids attached by the runner. */
export interface HandlerLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Everything a handler gets for one attempt of one execution. */
export interface TaskHandlerContext {
  execution: TaskExecution;
  /** The task (the definition pinned on the execution, if any), without its signing secret. */
  task: HandlerTask;
  /** Signs what the handler sends with the task's secret (`X-Punctual-Signature`). */
  sign: RequestSigner;
  /** The task's payload, or the manual run's override. */
  payload: unknown;
  attempt: number;
  /** Aborts on timeout, cancel, lease loss or shutdown: long handlers must listen to it. */
  signal: AbortSignal;
  log: HandlerLog;
  /** Reports progress (a percentage or an object); visible in Bull Board. */
  progress(value: number | object): Promise<void>;
}

/** A handler: its return value (JSON, ≤ 64 KiB) is recorded as the execution's result. */
export interface TaskHandlerImpl {
  run(context: TaskHandlerContext): Promise<unknown>;
}

/** A handler given as a function: its return value is the execution's result. */
export type TaskHandlerFunction = (context: TaskHandlerContext) => Promise<unknown>;

/** Handlers passed by name (functions or objects), beside the discovered `@TaskHandler` providers. */
export type HandlerMap = Readonly<Record<string, TaskHandlerFunction | TaskHandlerImpl>>;

/** Marks a provider as the handler named `name`; the registry discovers it at start. */
export function TaskHandler(name: string): ClassDecorator {
  return applyDecorators(Injectable(), SetMetadata(TASK_HANDLER_METADATA, name));
}

/** Thrown by a handler to fail without further attempts: the execution goes straight to `dead`. */
export class UnrecoverableError extends Error {
  override readonly name = 'UnrecoverableError';
}

/** Startup refused: two handlers share a name, or a name is not valid. */
export class HandlerRegistryError extends Error {
  override readonly name = 'HandlerRegistryError';
}
