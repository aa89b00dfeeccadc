import { bareName } from '@punctual/contract';
import type { Task, TaskExecution } from '@punctual/db';

export type NotifyEvent = 'succeeded' | 'failed' | 'dead';

/** The outbox message for an execution's event, or null when the task does not ask for it. */
export function notificationFor(task: Task, execution: TaskExecution, event: NotifyEvent, error?: string) {
  if (!task.notifyUrl || !task.notifyOn.includes(event)) return null;
  return {
    topic: `execution.${event}`,
    payload: {
      url: task.notifyUrl,
      taskId: task.id,
      event,
      execution: {
        id: execution.id,
        task: bareName(execution.taskName),
        namespace: execution.namespace,
        scheduledFor: execution.scheduledFor.toISOString(),
        fireAt: execution.fireAt.toISOString(),
        trigger: execution.trigger,
        attempt: execution.attempt,
        status: event === 'failed' ? 'retrying' : event,
        error: error ?? null,
      },
    },
  };
}
