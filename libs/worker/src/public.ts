/**
 * `@punctual/worker`: Punctual's worker in your own app. `PunctualWorkerModule` runs executions in
 * a Nest app with its `@TaskHandler` providers; `createWorker` does the same without Nest.
 */
export {
  type HandlerLog,
  type HandlerMap,
  type HandlerTask,
  TaskHandler,
  type TaskHandlerContext,
  type TaskHandlerFunction,
  type TaskHandlerImpl,
  UnrecoverableError,
} from '@punctual/handlers';
export { createWorker, type CreateWorkerOptions, type PunctualWorker } from './create-worker.js';
export { type PunctualWorkerAsyncOptions, PunctualWorkerModule } from './punctual-worker.module.js';
export type { PunctualWorkerOptions } from './worker-options.js';
