import { SCHEDULE_KINDS, scheduleKindsOf, type TaskPatch, type TaskSpec } from '@punctual/contract';
import type { TaskDefinitionJson } from './task.presenter.js';
import { InvalidTaskError } from './errors.js';

/**
 * The task spec that results from applying `patch` to the current task. Nested objects are
 * merged; `labels` is replaced as a whole. A patch that names a schedule kind (the contract's
 * `SchedulePatch` allows one) replaces the current kind: the result holds exactly one.
 */
export function mergeTaskPatch(current: TaskDefinitionJson, patch: TaskPatch, name: string): TaskSpec {
  for (const field of [
    'handler',
    'schedule',
    'policy',
    'payload',
    'notify',
    'paused',
    'secretFields',
    'labels',
  ] as const) {
    if (patch[field] === null) throw new InvalidTaskError(field, `${field} cannot be null`, 'validation_failed');
  }
  const schedule: Record<string, unknown> = { ...current.schedule };
  if (patch.schedule && scheduleKindsOf(patch.schedule).length > 0) for (const k of SCHEDULE_KINDS) delete schedule[k];
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
