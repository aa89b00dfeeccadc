export { FailHandler, LogHandler, NoopHandler, SleepHandler } from './builtin.handlers.js';
export { HandlerRegistry } from './handler-registry.js';
export { type HandlerTask, handlerTaskOf, hmacSigner, type RequestSigner } from './handler-task.js';
export { HandlersModule } from './handlers.module.js';
export {
  type HandlerLog,
  type HandlerMap,
  HandlerRegistryError,
  TASK_HANDLER_METADATA,
  TaskHandler,
  type TaskHandlerContext,
  type TaskHandlerFunction,
  type TaskHandlerImpl,
  UnrecoverableError,
} from './task-handler.js';
export * from './http/index.js';
