import { Injectable } from '@nestjs/common';
import type { Principal } from '@punctual/auth';
import { AuditRepository, type Db, type Prisma, type Task, TaskVersionsRepository } from '@punctual/db';
import { bestEffort } from '@punctual/metrics';
import { EXECUTION_CANCEL_CHANNEL, TASKS_CHANGED_CHANNEL, tasksChangedMessage } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import { presentDefinition } from './task.presenter.js';

/** Records a task change in the audit log (in the change's transaction) and tells the leader. */
@Injectable()
export class TaskChanges {
  constructor(
    private readonly audit: AuditRepository,
    private readonly redis: RedisService,
    private readonly versions: TaskVersionsRepository,
  ) {}

  /**
   * Records a change of a task: its audit entry and, when it leaves a task (anything but a delete),
   * the version it made, whole — with `reason`, when the request gave one.
   */
  async record(
    db: Db,
    actor: Principal,
    action: string,
    target: string,
    before: Task | null,
    after: Task | null,
    reason?: string,
  ): Promise<void> {
    await this.audit.record(
      { actor: actor.actor, action, target, before: snapshot(before), after: snapshot(after) },
      db,
    );
    // A change that changed nothing (a pause of a paused task) made no version.
    if (after && after.version !== before?.version)
      await this.versions.record([versionOf(actor, action, after, reason)], after.updatedAt, db);
  }

  /** One audit entry (and one version) per change, written together. */
  async recordMany(
    db: Db,
    actor: Principal,
    changes: { action: string; target: string; before: Task | null; after: Task | null }[],
    reason?: string,
  ): Promise<void> {
    await this.audit.recordMany(
      // Written as one JSON document: each definition goes into it as it is, with no copy of its own.
      changes.map((c) => ({
        actor: actor.actor,
        action: c.action,
        target: c.target,
        before: definitionOf(c.before),
        after: definitionOf(c.after),
      })),
      db,
    );
    const written = changes.filter((c) => c.after && c.after.version !== c.before?.version);
    if (written.length)
      await this.versions.record(
        written.map((c) => versionOf(actor, c.action, c.after!, reason)),
        written[0]!.after!.updatedAt,
        db,
      );
  }

  /** Stores the version a change left without an audit entry of its own (a calendar edit re-planned the task). */
  async recordVersion(db: Db, actor: Principal, action: string, task: Task): Promise<void> {
    await this.versions.record([versionOf(actor, action, task, undefined)], task.updatedAt, db);
  }

  /** The version a new task of each name starts at (version numbers go on across a name's tasks). */
  firstVersions(names: string[], db: Db): Promise<Map<string, number>> {
    return this.versions.firstVersions(names, db);
  }

  /**
   * Wakes the leader: plan at once, and fire what the API inserted for the tasks `inserted` names
   * (manual runs, backfills, catch-up; `all`: many tasks — the leader looks at every planned row due).
   * Tells the workers running `cancelled` executions to abort them. Best effort: the change is
   * committed already, and the leader's tick and sweep catch up with a word that was lost.
   */
  async announce(cancelled: string[] = [], inserted: readonly string[] | 'all' = []): Promise<void> {
    for (const id of cancelled)
      await bestEffort(
        this.redis.client.publish(this.redis.key(EXECUTION_CANCEL_CHANNEL), id),
        'tasks.announce-cancel',
      );
    await bestEffort(
      this.redis.client.publish(this.redis.key(TASKS_CHANGED_CHANNEL), tasksChangedMessage(inserted)),
      'tasks.announce-change',
    );
  }
}

/** A task's version as `task_version` keeps it: the definition whole, its payload as stored (what a rollback restores). */
function versionOf(actor: Principal, action: string, task: Task, reason: string | undefined) {
  return {
    taskName: task.name,
    version: task.version,
    taskId: task.id,
    action,
    definition: { ...presentDefinition(task), payload: task.payload } as unknown as Prisma.JsonValue,
    changedBy: actor.actor,
    reason: reason ?? null,
  };
}

function snapshot(task: Task | null): Prisma.InputJsonValue | null {
  return task ? (JSON.parse(JSON.stringify(presentDefinition(task))) as Prisma.InputJsonValue) : null;
}

/** A task's definition as the audit log keeps it, for an entry that is serialized whole (see AuditRepository.recordMany). */
function definitionOf(task: Task | null): Prisma.InputJsonValue | null {
  return task ? (presentDefinition(task) as unknown as Prisma.InputJsonValue) : null;
}
