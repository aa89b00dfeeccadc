import type { Task, TaskExecution } from '@punctual/db';
import { describe, expect, it } from 'vitest';
import { holdBeforeSlotMs, skipReasonAtClaim } from './claim-checks.js';

const fireAt = new Date('2026-06-01T12:00:00Z');
const execution = (o: Partial<TaskExecution> = {}) => ({ attempt: 1, trigger: 'schedule', fireAt, taskVersion: 1, pinnedDefinition: null, ...o }) as TaskExecution;
const task = (o: Partial<Task> = {}) => ({ status: 'active', maxDelayMs: 60_000, planVersion: 1, ...o }) as Task;
const at = (ms: number) => new Date(fireAt.getTime() + ms);

describe('skipReasonAtClaim', () => {
  it('runs an execution claimed within maxDelay of fire_at', () => {
    expect(skipReasonAtClaim(execution(), task(), at(60_000))).toBeNull();
  });
  it('skips a first attempt started after fire_at + maxDelay as late', () => {
    expect(skipReasonAtClaim(execution(), task(), at(60_001))).toBe('late');
  });
  it('never calls a catch-up, manual or backfill run late: its slot is past by design', () => {
    for (const trigger of ['catchup', 'manual', 'backfill'] as const) expect(skipReasonAtClaim(execution({ trigger }), task(), at(3_600_000))).toBeNull();
  });
  it('never calls a retry late: its delay is the backoff, not the slot', () => {
    expect(skipReasonAtClaim(execution({ attempt: 2 }), task(), at(3_600_000))).toBeNull();
  });
  it('skips when the task was deleted, or paused unless the run is manual', () => {
    expect(skipReasonAtClaim(execution(), null, at(0))).toBe('task_deleted');
    expect(skipReasonAtClaim(execution(), task({ status: 'paused' }), at(0))).toBe('paused');
    expect(skipReasonAtClaim(execution({ trigger: 'manual' }), task({ status: 'paused' }), at(0))).toBeNull();
  });
  it('a retry finishes its slot whatever happened to the task since it started, but deletion', () => {
    expect(skipReasonAtClaim(execution({ attempt: 2 }), task({ status: 'paused' }), at(0))).toBeNull();
    expect(skipReasonAtClaim(execution({ attempt: 2, taskVersion: 1 }), task({ planVersion: 4 }), at(0))).toBeNull();
    expect(skipReasonAtClaim(execution({ attempt: 2 }), null, at(0))).toBe('task_deleted');
  });
  it('skips a first attempt planned under a definition the task no longer has, unless the edit pinned it', () => {
    expect(skipReasonAtClaim(execution({ taskVersion: 1 }), task({ planVersion: 2 }), at(0))).toBe('task_changed');
    expect(skipReasonAtClaim(execution({ taskVersion: 1, pinnedDefinition: { handler: 'noop' } }), task({ planVersion: 2 }), at(0))).toBeNull();
  });
});

describe('holdBeforeSlotMs', () => {
  it('holds a job pushed early until its fire_at, and nothing else', () => {
    expect(holdBeforeSlotMs(1_050, 1_000, 50)).toBe(50);
    expect(holdBeforeSlotMs(1_000, 1_000, 50)).toBe(0);
    expect(holdBeforeSlotMs(900, 1_000, 50)).toBe(0);
    expect(holdBeforeSlotMs(undefined, 1_000, 50)).toBe(0);
  });

  it('never parks a job longer than the lead plus the tolerated clock skew', () => {
    expect(holdBeforeSlotMs(61_000, 1_000, 50)).toBe(300);
  });
});
