import { InvalidTaskError } from '../errors.js';
import type { TaskInput } from './task-input.js';
import type { TaskJson } from './task.presenter.js';

/** A partial task: every field optional, nested objects merged. */
export type TaskPatch = Partial<Omit<TaskInput, 'name' | 'schedule' | 'policy' | 'notify'>> & {
  schedule?: Partial<TaskInput['schedule']>;
  policy?: Partial<NonNullable<TaskInput['policy']>>;
  notify?: TaskInput['notify'];
};

const KINDS = ['cron', 'rrule', 'at', 'every'] as const;

/**
 * The task input that results from applying `patch` to the current task. A patch that names a
 * schedule kind replaces the current kind (a task holds exactly one).
 */
export function mergeTaskPatch(current: TaskJson, patch: TaskPatch, name: string): TaskInput {
  for (const field of ['handler', 'schedule', 'policy', 'payload', 'notify', 'paused', 'secretFields'] as const) {
    if (patch[field] === null) throw new InvalidTaskError(field, `${field} cannot be null`, 'validation_failed');
  }
  const schedule: Record<string, unknown> = { ...current.schedule };
  if (patch.schedule && KINDS.some((k) => patch.schedule![k] !== undefined)) for (const k of KINDS) delete schedule[k];
  Object.assign(schedule, patch.schedule);
  return {
    name,
    description: patch.description !== undefined ? patch.description : current.description,
    handler: patch.handler ?? current.handler,
    payload: patch.payload ?? current.payload,
    secretFields: patch.secretFields ?? current.secretFields,
    schedule: schedule as TaskInput['schedule'],
    policy: {
      ...current.policy,
      ...patch.policy,
      retry: { ...current.policy.retry, ...patch.policy?.retry },
    } as TaskInput['policy'],
    notify: { ...current.notify, ...patch.notify },
    paused: patch.paused ?? current.paused,
  };
}
