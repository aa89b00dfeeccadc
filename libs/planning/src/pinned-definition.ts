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
  return {
    handler: task.handler,
    payload: task.payload,
    secretFields: task.secretFields,
    timeoutMs: task.timeoutMs,
    maxAttempts: task.maxAttempts,
    backoffMs: task.backoffMs,
    backoffMaxMs: task.backoffMaxMs,
  };
}

/** The task as an execution pinned to `pinned` runs it: the current task with the pinned fields over it. */
export function withPinnedDefinition<T extends PinnedDefinition>(task: T, pinned: unknown): T {
  if (pinned === null || typeof pinned !== 'object' || Array.isArray(pinned)) return task;
  const p = pinned as Partial<PinnedDefinition<T['payload']>>;
  return {
    ...task,
    handler: p.handler ?? task.handler,
    payload: p.payload ?? task.payload,
    secretFields: p.secretFields ?? task.secretFields,
    timeoutMs: p.timeoutMs ?? task.timeoutMs,
    maxAttempts: p.maxAttempts ?? task.maxAttempts,
    backoffMs: p.backoffMs ?? task.backoffMs,
    backoffMaxMs: p.backoffMaxMs ?? task.backoffMaxMs,
  };
}
