import { Injectable } from '@nestjs/common';
import {
  splitQualifiedName,
  redactPayload,
  type Task as TaskJson,
  type TaskVersion,
  type TaskVersionDetail,
  type TaskVersionPage,
} from '@punctual/contract';
import { TasksRepository, type TaskVersionRow, TaskVersionsRepository } from '@punctual/db';
import { InvalidCursorError, NotFoundError } from './errors.js';
import { decodeCursor, encodeCursor } from './page-cursor.js';
import { fieldChanges, type TaskState } from './task-diff.js';
import { type TaskDefinitionJson, withBareNames } from './task.presenter.js';

/** A task's versions as the API shows them: newest first, each whole (secret fields redacted), one with its diff. */
@Injectable()
export class TaskVersionsService {
  constructor(
    private readonly versions: TaskVersionsRepository,
    private readonly tasks: TasksRepository,
  ) {}

  /** `GET /v1/tasks/{name}/versions`: 404 only when the name never had a version. */
  async list(name: string, limit: number, cursor?: string): Promise<TaskVersionPage> {
    const before = cursor === undefined ? undefined : Number(decodeCursor<{ v: string }>(cursor, 'v').v);
    if (before !== undefined && !Number.isSafeInteger(before)) throw new InvalidCursorError();
    const [rows, current] = await Promise.all([this.versions.list(name, limit, before), this.currentVersion(name)]);
    if (rows.length === 0 && before === undefined) throw new NotFoundError('task', name);
    return {
      items: rows.map((r) => present(r, current)),
      nextCursor: rows.length === limit ? encodeCursor({ v: String(rows.at(-1)!.version) }) : null,
    };
  }

  /** `GET /v1/tasks/{name}/versions/{version}?against=`: the version and the fields that differ from `against` (default the one before). */
  async get(name: string, version: number, against?: number): Promise<TaskVersionDetail> {
    const row = await this.versions.get(name, version);
    if (!row) throw new NotFoundError('version', `${version} of task "${name}"`);
    const other =
      against !== undefined
        ? await this.versions.get(name, against)
        : ((await this.versions.list(name, 1, version))[0] ?? null);
    if (against !== undefined && !other) throw new NotFoundError('version', `${against} of task "${name}"`);
    const diff = other ? fieldChanges(stateOf(other), stateOf(row)) : [];
    return { ...present(row, await this.currentVersion(name)), against: other?.version ?? null, diff };
  }

  private async currentVersion(name: string): Promise<number | null> {
    return (await this.tasks.findByName(name))?.version ?? null;
  }
}

function present(row: TaskVersionRow, current: number | null): TaskVersion {
  const definition = row.definition as unknown as TaskDefinitionJson;
  return {
    version: row.version,
    action: row.action,
    changedAt: row.changedAt.toISOString(),
    changedBy: row.changedBy,
    reason: row.reason,
    current: row.version === current,
    definition: {
      ...withBareNames(definition),
      namespace: splitQualifiedName(definition.name).namespace,
      payload: redactPayload(definition.payload, definition.secretFields),
    } as Omit<TaskJson, 'health'>,
  };
}

/** A version's definition as a diff compares it (its payload whole: the diff leaves secret fields' values out itself). */
function stateOf(row: TaskVersionRow): TaskState {
  return row.definition as unknown as TaskState;
}
