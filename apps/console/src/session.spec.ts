import { routes } from '@punctual/contract';
import { describe, expect, it } from 'vitest';
import { roleMayCall } from './session.js';

describe('which controls a role sees', () => {
  it('follows the roles of the contract routes: viewer reads, operator also operates, admin also deletes', () => {
    const controls = [
      routes.pauseTask,
      routes.resumeTask,
      routes.triggerTask,
      routes.backfillTask,
      routes.retryExecution,
      routes.cancelExecution,
      routes.deleteTask,
    ];
    const seen = (role: 'viewer' | 'operator' | 'admin') =>
      controls.filter((r) => roleMayCall(role, r)).map((r) => r.path.split('/').pop());
    expect(seen('viewer')).toEqual([]);
    expect(seen('operator')).toEqual(['pause', 'resume', 'trigger', 'backfill', 'retry', 'cancel']);
    expect(seen('admin')).toEqual(['pause', 'resume', 'trigger', 'backfill', 'retry', 'cancel', '{name}']);
    expect(roleMayCall('viewer', routes.listTasks)).toBe(true);
  });
});
