import { describe, expect, it } from 'vitest';
import {
  type ClaimContext,
  type ClaimSlot,
  type ClaimTask,
  type ClaimVerdict,
  type RunInProgress,
  judgeClaim,
} from './claim-judgement.js';

/** Instants in seconds from an arbitrary origin: slot 10 is due at 10 s. */
const T0 = Date.parse('2026-06-01T09:00:00.000Z');
const s = (seconds: number) => new Date(T0 + seconds * 1000);

const slot = (over: Partial<ClaimSlot> = {}): ClaimSlot => ({
  status: 'queued',
  attempt: 0,
  trigger: 'schedule',
  scheduledFor: s(10),
  fireAt: s(10),
  exclusive: true,
  taskVersion: 1,
  pinned: false,
  leaseUntil: null,
  nextAttemptAt: null,
  heldAt: null,
  ...over,
});
const task = (over: Partial<ClaimTask> = {}): ClaimTask => ({
  status: 'active',
  planVersion: 1,
  overlap: 'skip',
  maxDelayMs: 60_000,
  maxAttempts: 3,
  ...over,
});
/** A run of the task that started at `started` s (released on time unless `released` says when). */
const holder = (started: number, over: Partial<RunInProgress> = {}): RunInProgress => ({
  id: `h${started}`,
  fireAt: s(started),
  firstStartedAt: s(started),
  releasedAt: s(started),
  running: true,
  ...over,
});
const judge = (over: Partial<ClaimContext>, nowSeconds: number): ClaimVerdict =>
  judgeClaim(
    {
      slot: slot(),
      task: task(),
      runsInProgress: [],
      earlierDue: false,
      otherBuffered: false,
      previousSlotAt: null,
      ...over,
    },
    s(nowSeconds),
  );

describe('judgeClaim: which executions can start at all', () => {
  it.each([
    ['scheduled', 'run'],
    ['queued', 'run'],
    ['retrying', 'run'],
    ['succeeded', 'lost'],
    ['dead', 'lost'],
    ['skipped', 'lost'],
    ['missed', 'lost'],
    ['cancelled', 'lost'],
  ] as const)('%s → %s', (status, kind) => {
    const attempt = status === 'retrying' ? 1 : 0;
    expect(judge({ slot: slot({ status, attempt }) }, 10).kind).toBe(kind);
  });

  it("a running attempt whose lease holds is its worker's; one whose lease expired is taken over while attempts remain", () => {
    expect(judge({ slot: slot({ status: 'running', attempt: 1, leaseUntil: s(11) }) }, 10.5)).toEqual({ kind: 'lost' });
    expect(judge({ slot: slot({ status: 'running', attempt: 1, leaseUntil: s(11) }) }, 11.5)).toEqual({ kind: 'run' });
    expect(judge({ slot: slot({ status: 'running', attempt: 3, leaseUntil: s(11) }) }, 11.5)).toEqual({ kind: 'lost' });
  });

  it("a first attempt of a deleted task is skipped; a later one is the delete's to cancel", () => {
    expect(judge({ task: null }, 10)).toEqual({ kind: 'skip', reason: 'task_deleted' });
    expect(judge({ task: null, slot: slot({ status: 'retrying', attempt: 1 }) }, 10)).toEqual({ kind: 'lost' });
  });
});

describe('judgeClaim: never early', () => {
  it("waits for fire_at (a jitter edit may have moved it past the pushed job's instant)", () => {
    expect(judge({ slot: slot({ fireAt: s(10.4) }) }, 10.1)).toEqual({ kind: 'early', retryInMs: 300 });
    expect(judge({ slot: slot({ fireAt: s(10.4) }) }, 10.4)).toEqual({ kind: 'run' });
  });

  it('a retry waits for its next_attempt_at', () => {
    expect(judge({ slot: slot({ status: 'retrying', attempt: 1, nextAttemptAt: s(12) }) }, 11.5)).toEqual({
      kind: 'early',
      retryInMs: 500,
    });
    expect(judge({ slot: slot({ status: 'retrying', attempt: 1, nextAttemptAt: s(12) }) }, 12)).toEqual({
      kind: 'run',
    });
  });
});

describe('judgeClaim: checks of a first attempt', () => {
  it('a paused task skips it, but not a manual run nor a retry', () => {
    expect(judge({ task: task({ status: 'paused' }) }, 10)).toEqual({ kind: 'skip', reason: 'paused' });
    expect(judge({ task: task({ status: 'paused' }), slot: slot({ trigger: 'manual' }) }, 10)).toEqual({ kind: 'run' });
    expect(judge({ task: task({ status: 'paused' }), slot: slot({ status: 'retrying', attempt: 1 }) }, 10)).toEqual({
      kind: 'run',
    });
  });

  it('a row left on an old plan is skipped as task_changed, unless an edit pinned it', () => {
    expect(judge({ task: task({ planVersion: 2 }) }, 10)).toEqual({ kind: 'skip', reason: 'task_changed' });
    expect(judge({ task: task({ planVersion: 2 }), slot: slot({ pinned: true }) }, 10)).toEqual({ kind: 'run' });
  });

  it('late past fire_at + maxDelay (the misfire policy decides); catch-up, manual, backfill runs and retries never are', () => {
    expect(judge({}, 70)).toEqual({ kind: 'run' });
    expect(judge({}, 70.001)).toEqual({ kind: 'late' });
    for (const trigger of ['catchup', 'manual', 'backfill'] as const)
      expect(judge({ slot: slot({ trigger }) }, 5000)).toEqual({ kind: 'run' });
    expect(judge({ slot: slot({ status: 'retrying', attempt: 1 }) }, 5000)).toEqual({ kind: 'run' });
  });

  it('a slot held back by flow control is never late for the wait: it was judged in time when first held', () => {
    expect(judge({ slot: slot({ heldAt: s(10) }) }, 5000)).toEqual({ kind: 'run' });
    expect(judge({ slot: slot({ heldAt: null }) }, 5000)).toEqual({ kind: 'late' });
  });
});

describe('judgeClaim: a slot being retried still holds its task', () => {
  const retrying = (started: number) => holder(started, { running: false });

  it('a newcomer finds the previous slot retrying since before its time: the overlap policy judges the newcomer', () => {
    expect(judge({ runsInProgress: [retrying(5)] }, 10)).toEqual({ kind: 'skip', reason: 'overlap' });
    expect(judge({ runsInProgress: [retrying(5)], task: task({ overlap: 'buffer_one' }) }, 10)).toEqual({
      kind: 'buffer',
    });
    expect(judge({ runsInProgress: [retrying(5)], task: task({ overlap: 'replace' }) }, 10)).toEqual({
      kind: 'replace',
      holderIds: ['h5'],
    });
  });

  it('the retry itself is never judged by the overlap policy, whatever started since (after a failure, a lease expiry, a crash)', () => {
    const retry = slot({ status: 'retrying', attempt: 1, scheduledFor: s(5), fireAt: s(5) });
    const takeover = slot({ status: 'running', attempt: 1, scheduledFor: s(5), fireAt: s(5), leaseUntil: s(9) });
    for (const overlap of ['skip', 'buffer_one', 'replace'] as const) {
      expect(judge({ slot: retry, task: task({ overlap }), earlierDue: true }, 12)).toEqual({ kind: 'run' });
      expect(judge({ slot: takeover, task: task({ overlap }) }, 12)).toEqual({ kind: 'run' });
      // Something else of the task is running (an edit turned `allow` into an exclusive policy): the retry waits for it, never skipped.
      expect(judge({ slot: retry, task: task({ overlap }), runsInProgress: [holder(10)] }, 12)).toEqual({
        kind: 'park',
      });
      expect(judge({ slot: retry, task: task({ overlap }), runsInProgress: [retrying(3)] }, 12)).toEqual({
        kind: 'run',
      });
    }
  });
});

describe("judgeClaim: overlap policy only against a run in progress at the slot's own time", () => {
  it.each([
    ['skip', { kind: 'skip', reason: 'overlap' }],
    ['buffer_one', { kind: 'buffer' }],
    ['replace', { kind: 'replace', holderIds: ['h9'] }],
  ] as const)('%s: a run that started before the slot and still runs', (overlap, verdict) => {
    expect(judge({ task: task({ overlap }), runsInProgress: [holder(9)] }, 10.01)).toEqual(verdict);
  });

  it('buffer_one: the buffered slot waits for the run; another newcomer is skipped while one is buffered', () => {
    const buffered = slot({ nextAttemptAt: s(10) });
    expect(judge({ task: task({ overlap: 'buffer_one' }), runsInProgress: [holder(9)], slot: buffered }, 11)).toEqual({
      kind: 'park',
    });
    expect(
      judge({ task: task({ overlap: 'buffer_one' }), runsInProgress: [holder(9)], otherBuffered: true }, 11),
    ).toEqual({
      kind: 'skip',
      reason: 'overlap',
    });
    // The run ended: the buffered slot starts.
    expect(judge({ task: task({ overlap: 'buffer_one' }), slot: buffered }, 11)).toEqual({ kind: 'run' });
  });

  it('a run released late (a failover adopted it) is judged as if it had been released on time: the slot asks again once it has waited as long', () => {
    const adopted = holder(9, { fireAt: s(6), releasedAt: s(9) });
    expect(judge({ runsInProgress: [adopted] }, 10.5)).toEqual({ kind: 'wait', retryInMs: 2_500 });
    expect(judge({ runsInProgress: [adopted] }, 12.9)).toEqual({ kind: 'wait', retryInMs: 100 });
    expect(judge({ runsInProgress: [adopted] }, 13)).toEqual({ kind: 'skip', reason: 'overlap' });
  });

  it('a run released on time that started late (parked behind a backlog) is judged as if it had started on time too — but not under buffer_one, whose waiting slot starts late by design', () => {
    const behindBacklog = holder(9, { fireAt: s(6), releasedAt: s(6) });
    expect(judge({ runsInProgress: [behindBacklog] }, 10)).toEqual({ kind: 'wait', retryInMs: 3_000 });
    expect(judge({ runsInProgress: [behindBacklog] }, 13)).toEqual({ kind: 'skip', reason: 'overlap' });
    expect(judge({ task: task({ overlap: 'replace' }), runsInProgress: [behindBacklog] }, 10)).toEqual({
      kind: 'wait',
      retryInMs: 3_000,
    });
    // buffer_one: the buffered run started when the one before it ended; the newcomer is buffered (or skipped) at once.
    expect(judge({ task: task({ overlap: 'buffer_one' }), runsInProgress: [behindBacklog] }, 10)).toEqual({
      kind: 'buffer',
    });
    expect(
      judge({ task: task({ overlap: 'buffer_one' }), runsInProgress: [behindBacklog], otherBuffered: true }, 10),
    ).toEqual({ kind: 'skip', reason: 'overlap' });
    // One that started on time and runs on past the slot's time is the task's own overlap: skipped at once.
    expect(judge({ runsInProgress: [holder(6, { releasedAt: s(6) })] }, 10)).toEqual({
      kind: 'skip',
      reason: 'overlap',
    });
  });

  it(
    "a late run that has lasted longer than the gap from the slot before is a slow task's own overlap: " +
      'judged at once, so a task slower than its schedule never parks new slots behind its backlog',
    () => {
      // Slots every 2 s; the run ahead (its slot at 2 s, late in a backlog) started at 9 s, 7 s late.
      const late = holder(9, { fireAt: s(2), releasedAt: s(2) });
      const previousSlotAt = s(8);
      // It has run 1 s: a quick run would end soon — the slot asks again when it has run the gap (2 s).
      expect(judge({ runsInProgress: [late], previousSlotAt }, 10)).toEqual({ kind: 'wait', retryInMs: 1_000 });
      // Still running after 2 s: on time it would still have been running at this slot's time.
      expect(judge({ runsInProgress: [late], previousSlotAt }, 11)).toEqual({ kind: 'skip', reason: 'overlap' });
      expect(judge({ task: task({ overlap: 'replace' }), runsInProgress: [late], previousSlotAt }, 11)).toEqual({
        kind: 'replace',
        holderIds: ['h9'],
      });
      // A run between two attempts (a retry's backoff) still holds the task: its time counts from its first start.
      expect(
        judge(
          { runsInProgress: [holder(9, { fireAt: s(2), releasedAt: s(2), running: false })], previousSlotAt },
          11.5,
        ),
      ).toEqual({ kind: 'skip', reason: 'overlap' });
      // No slot before (the first of the task): only the allowance counts.
      expect(judge({ runsInProgress: [late] }, 11)).toEqual({ kind: 'wait', retryInMs: 6_000 });
      // A backfill has no place in the schedule: the time since the last scheduled slot is no gap.
      expect(judge({ slot: slot({ trigger: 'backfill' }), runsInProgress: [late], previousSlotAt }, 11)).toEqual({
        kind: 'wait',
        retryInMs: 6_000,
      });
    },
  );

  it("a run that started after the slot's time is one the slot waits behind (a backlog): it is parked for its turn, and never skipped for it", () => {
    for (const overlap of ['skip', 'buffer_one', 'replace'] as const) {
      expect(judge({ task: task({ overlap }), runsInProgress: [holder(11)] }, 12)).toEqual({ kind: 'park' });
      expect(judge({ task: task({ overlap, maxDelayMs: 3_600_000 }), runsInProgress: [holder(11)] }, 600)).toEqual({
        kind: 'park',
      });
    }
  });

  it('an earlier slot due and not started goes first (backlogs run in slot order): parked; then the slot runs', () => {
    expect(judge({ earlierDue: true }, 10)).toEqual({ kind: 'park' });
    expect(judge({}, 10)).toEqual({ kind: 'run' });
  });

  it('a task with overlap allow is never judged', () => {
    expect(
      judge(
        {
          slot: slot({ exclusive: false }),
          task: task({ overlap: 'allow' }),
          runsInProgress: [holder(9)],
          earlierDue: true,
        },
        10,
      ),
    ).toEqual({ kind: 'run' });
  });
});
