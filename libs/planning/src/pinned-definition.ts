/** The fields of a task's definition that an execution in progress keeps when the task is edited. */
export const PINNED_FIELDS = [
  'handler',
  'payload',
  'secretFields',
  'timeoutMs',
  'maxAttempts',
  'backoffMs',
  'backoffMaxMs',
] as const;

/**
 * What an execution in progress keeps of its task's definition when the task is edited: it finishes
 * its slot — the attempt running and its retries — under the definition it started with.
 */
export interface PinnedDefinition<Payload = unknown> {
  handler: string;
  payload: Payload;
  secretFields: string[];
  timeoutMs: number;
  maxAttempts: number;
  backoffMs: number;
  backoffMaxMs: number;
}

export function pinnedDefinitionOf<T extends PinnedDefinition>(task: T): PinnedDefinition<T['payload']> {
  const pinned: Partial<Record<(typeof PINNED_FIELDS)[number], unknown>> = {};
  for (const field of PINNED_FIELDS) pinned[field] = task[field];
  return pinned as PinnedDefinition<T['payload']>;
}

/** The task as an execution pinned to `pinned` runs it: the current task with the pinned fields over it. */
export function withPinnedDefinition<T extends PinnedDefinition>(task: T, pinned: unknown): T {
  if (pinned === null || typeof pinned !== 'object' || Array.isArray(pinned)) return task;
  const p = pinned as Partial<PinnedDefinition<T['payload']>>;
  return {
    ...task,
    ...Object.fromEntries(
      PINNED_FIELDS.flatMap((field) => (p[field] === undefined || p[field] === null ? [] : [[field, p[field]]])),
    ),
  };
}
