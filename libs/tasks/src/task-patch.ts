import type { TaskPatch, TaskSpec } from '@punctual/contract';
import type { TaskDefinitionJson } from './task.presenter.js';
import { InvalidTaskError } from './errors.js';

const KINDS = ['cron', 'rrule', 'at', 'every'] as const;

/**
 * The task spec that results from applying `patch` to the current task. Nested objects are
 * merged; `labels` is replaced as a whole. A patch that names a schedule kind replaces the
 * current kind (a task holds exactly one).
 */
export function mergeTaskPatch(current: TaskDefinitionJson, patch: TaskPatch, name: string): TaskSpec {
  for (const field of ['handler', 'schedule', 'policy', 'payload', 'notify', 'paused', 'secretFields', 'labels'] as const) {
    if (patch[field] === null) throw new InvalidTaskError(field, `${field} cannot be null`, 'validation_failed');
  }
  const schedule: Record<string, unknown> = { ...current.schedule };
  if (patch.schedule && KINDS.some((k) => patch.schedule![k] !== undefined)) for (const k of KINDS) delete schedule[k];
  Object.assign(schedule, patch.schedule);
  return {
    name,
    description: patch.description !== undefined ? patch.description : current.description,
    handler: patch.handler ?? current.handler,
    payload: patch.payload ?? (current.payload as TaskSpec['payload']),
    secretFields: patch.secretFields ?? current.secretFields,
    schedule: schedule as TaskSpec['schedule'],
    policy: {
      ...current.policy,
      ...patch.policy,
      retry: { ...current.policy.retry, ...patch.policy?.retry },
    },
    notify: { ...current.notify, ...patch.notify } as TaskSpec['notify'],
    paused: patch.paused ?? current.paused,
    labels: patch.labels ?? current.labels,
    managedBy: patch.managedBy !== undefined ? patch.managedBy : current.managedBy,
    slo: patch.slo !== undefined ? patch.slo : current.slo,
  };
}
