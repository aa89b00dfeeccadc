import { DEFAULT_NAMESPACE, splitQualifiedName } from '@punctual/contract';

export class TaskNameTakenError extends Error {
  override readonly name = 'TaskNameTakenError';
  constructor(readonly taskName: string) {
    const { namespace, name } = splitQualifiedName(taskName);
    super(
      `a task named "${name}" already exists${namespace === DEFAULT_NAMESPACE ? '' : ` in namespace "${namespace}"`}`,
    );
  }
}

/** Creating tasks would take a namespace past its `maxTasks`: answered 429 `quota_exceeded`, nothing stored. */
export class QuotaExceededError extends Error {
  override readonly name = 'QuotaExceededError';
  constructor(
    readonly namespace: string,
    readonly quota: 'maxTasks',
    readonly limit: number,
    readonly used: number,
    readonly adding: number,
  ) {
    super(
      `namespace "${namespace}" holds ${used} task(s) and its quota ${quota} is ${limit}: ` +
        `${adding} more would pass it (delete tasks or raise the quota)`,
    );
  }
}

/** The namespace a task was being created in was deleted meanwhile: answered 404, nothing stored. */
export class NamespaceGoneError extends Error {
  override readonly name = 'NamespaceGoneError';
  constructor(readonly namespace: string) {
    super(`no namespace named "${namespace}"`);
  }
}
