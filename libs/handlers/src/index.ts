/**
 * What runs an execution's work: `@TaskHandler` providers found at start (`HandlerRegistry`), the
 * built-in handlers (`http` with its SSRF guard and signed requests, `noop`, `log`, with
 * WORKER_BUILTIN_HANDLERS; `sleep` and
 * `fail` for tests, with ENABLE_TEST_HANDLERS). A payload shown or logged goes through the
 * contract's `redactPayload`.
 *
 * @imports @punctual/config, @punctual/contract, @punctual/db, @punctual/tracing
 * @packageDocumentation
 */
export { BuiltinHandlers, LogHandler, NoopHandler } from './builtin.handlers.js';
export { FailHandler, SleepHandler, TestHandlers } from './test.handlers.js';
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
