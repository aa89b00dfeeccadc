/**
 * The executions queues (one per handler), defined once: their names, job payload type, job options and pub/sub
 * channels, the shape of the live workers' directory in Redis, and `ExecutionsQueue`, the producer every role adds jobs through (each job carrying
 * the active trace context).
 *
 * @imports @punctual/metrics, @punctual/redis, @punctual/tracing
 * @packageDocumentation
 */
export {
  BACKLOG_PRIORITY,
  ExecutionsQueue,
  type JobCounts,
  type ReleasedExecution,
  type TurnJob,
} from './executions.queue.js';
export {
  EXECUTION_CANCEL_CHANNEL,
  EXECUTION_JOB_OPTIONS,
  EXECUTIONS_QUEUE_PREFIX,
  EXECUTION_JOB,
  type ExecutionJobData,
  executionJobId,
  executionsQueueName,
  handlerOfQueue,
  FLOW_WAKE_CHANNEL,
  groupJobId,
  groupsKey,
  TASKS_CHANGED_CHANNEL,
  tasksChangedBy,
  tasksChangedMessage,
  turnJobId,
  WORKER_ENTRY_TTL_S,
  type WorkerEntry,
  WORKERS_KEY,
} from './queue.constants.js';
export { announceFlowKey } from './flow-wake.js';
export { QueueModule } from './queue.module.js';
