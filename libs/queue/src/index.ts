export { ExecutionsQueue } from './executions.queue.js';
export { EXECUTION_CANCEL_CHANNEL, EXECUTION_JOB_OPTIONS, EXECUTIONS_QUEUE, type ExecutionJobData, executionJobId, FLOW_WAKE_CHANNEL, TASKS_CHANGED_CHANNEL } from './queue.constants.js';
export { QueueModule } from './queue.module.js';
