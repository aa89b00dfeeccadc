import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { HANDLER_NAME_PATTERN } from '@punctual/contract';
import { type HandlerMap, HandlerRegistryError, TASK_HANDLER_METADATA, type TaskHandlerImpl } from './task-handler.js';

/** The handlers of this process, found by their `@TaskHandler` decorator. */
@Injectable()
export class HandlerRegistry implements OnModuleInit {
  private readonly handlers = new Map<string, TaskHandlerImpl>();

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const { metatype, instance } = wrapper;
      if (!metatype) continue;
      const name = Reflect.getMetadata(TASK_HANDLER_METADATA, metatype) as string | undefined;
      if (name === undefined) continue;
      // A request-scoped provider (or one that injects one) has no instance outside a request.
      if (!wrapper.isDependencyTreeStatic() || !instance) {
        throw new HandlerRegistryError(
          `handler "${name}" (${metatype.name}) is request-scoped or depends on a request-scoped provider; a task handler must be a singleton`,
        );
      }
      this.register(name, instance as TaskHandlerImpl);
    }
  }

  /** Adds a handler; a duplicate or malformed name stops the start with a clear message. */
  register(name: string, handler: TaskHandlerImpl): void {
    if (!HANDLER_NAME_PATTERN.test(name))
      throw new HandlerRegistryError(`handler name "${name}" must match ${HANDLER_NAME_PATTERN}`);
    if (this.handlers.has(name))
      throw new HandlerRegistryError(`two handlers are named "${name}"; handler names must be unique`);
    if (typeof handler.run !== 'function') throw new HandlerRegistryError(`handler "${name}" has no run() method`);
    this.handlers.set(name, handler);
  }

  /** Adds handlers given by name; a function becomes a handler whose `run` it is. */
  registerEach(handlers: HandlerMap): void {
    for (const [name, handler] of Object.entries(handlers))
      this.register(name, typeof handler === 'function' ? { run: handler } : handler);
  }

  get(name: string): TaskHandlerImpl | undefined {
    return this.handlers.get(name);
  }

  names(): string[] {
    return [...this.handlers.keys()].sort();
  }
}
