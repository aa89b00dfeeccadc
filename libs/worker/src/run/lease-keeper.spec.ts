import { afterEach, describe, expect, it, vi } from 'vitest';
import { AttemptControl } from './attempt-control.js';
import { LeaseKeeper } from './lease-keeper.js';
import { leasePolicy } from './lease-policy.js';

type Key = { id: string; attemptId: string };

/** A repository that answers as told: which attempts still own their execution, and what the others became. */
function repository(answer: { owned?: (k: Key) => boolean; status?: string; fail?: boolean } = {}) {
  const calls = { renew: [] as Key[][], check: [] as Key[][], permits: [] as string[][], dropped: [] as string[] };
  return {
    calls,
    renewLeases: async (keys: Key[]) => {
      calls.renew.push(keys);
      if (answer.fail) throw new Error('connection terminated');
      return new Set(keys.filter((k) => answer.owned?.(k) ?? true).map((k) => k.attemptId));
    },
    notOwned: async (keys: Key[]) => {
      calls.check.push(keys);
      if (answer.fail) throw new Error('connection terminated');
      return new Map(
        keys
          .filter((k) => !(answer.owned?.(k) ?? true))
          .map((k) => [k.attemptId, (answer.status ?? 'running') as never]),
      );
    },
    keepPermits: async (permits: { attemptId: string }[]) => {
      calls.permits.push(permits.map((p) => p.attemptId));
    },
    renewPermits: async (attemptIds: string[]) => {
      calls.permits.push(attemptIds);
    },
    dropPermits: async (attemptIds: string[]) => {
      calls.dropped.push(...attemptIds);
    },
  };
}

const control = (id: string, leaseMs: number, validFor = leaseMs) =>
  new AttemptControl(id, `${id}-attempt`, leasePolicy({ leaseMs }), 60_000, performance.now() + validFor);
/** The attempts' clock (`performance.now()`) and their timers, moved by the test. */
const fakeClock = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });

describe('LeaseKeeper', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('renews the leases due (a third of the lease old) in one statement and extends them', async () => {
    const repo = repository();
    const keeper = new LeaseKeeper(repo, leasePolicy({ leaseMs: 30_000 }), () => undefined);
    const fresh = control('fresh', 30_000);
    const due = control('due', 30_000, 15_000);
    keeper.track(fresh);
    keeper.track(due);
    const before = due.renewedAt;
    await keeper.tick();
    expect(repo.calls.renew).toEqual([[{ id: 'due', attemptId: 'due-attempt' }]]);
    expect(due.renewedAt).toBeGreaterThan(before);
    expect([fresh.cause, due.cause]).toEqual([null, null]);
    fresh.finish();
    due.finish();
  });

  it('aborts an attempt that no longer owns its execution: cancelled elsewhere, or taken over', async () => {
    fakeClock();
    const repo = repository({ owned: (k) => k.id === 'mine', status: 'cancelled' });
    const keeper = new LeaseKeeper(repo, leasePolicy({ leaseMs: 600 }), () => undefined);
    const [mine, gone] = [control('mine', 600), control('gone', 600)];
    keeper.track(mine);
    keeper.track(gone);
    // Checked once it has run for a tick: a run that short is not worth a read.
    vi.advanceTimersByTime(keeper.tickMs - 1);
    await keeper.tick();
    expect(repo.calls.check).toEqual([[]]);
    vi.advanceTimersByTime(1);
    await keeper.tick();
    expect([mine.cause, gone.cause]).toEqual([null, 'cancelled']);
    const taken = repository({ owned: () => false, status: 'running' });
    const other = control('other', 600, 150);
    const keeper2 = new LeaseKeeper(taken, leasePolicy({ leaseMs: 600 }), () => undefined);
    keeper2.track(other);
    await keeper2.tick();
    expect(other.cause).toBe('lease_lost');
    // Postgres said so: an outcome not yet written is dropped, not tried again.
    expect([mine.disowned, gone.disowned, other.disowned]).toEqual([false, true, true]);
    [mine, gone, other].forEach((c) => c.finish());
  });

  it('an attempt whose lease cannot be renewed aborts a margin before it ends, whatever the renewal does', async () => {
    fakeClock();
    const errors: unknown[] = [];
    const keeper = new LeaseKeeper(repository({ fail: true }), leasePolicy({ leaseMs: 3_000 }), (error) =>
      errors.push(error),
    );
    const attempt = control('cut-off', 3_000);
    keeper.track(attempt);
    // The keeper ticks (its renewals failing) every 10 ms until the attempt is aborted.
    let abortedAfter = 0;
    while (attempt.cause === null && abortedAfter < 5_000) {
      await keeper.tick();
      vi.advanceTimersByTime(10);
      abortedAfter += 10;
    }
    expect(attempt.cause).toBe('lease_lost');
    // Only this worker's timer: Postgres never said the execution went, so an outcome is still tried.
    expect(attempt.disowned).toBe(false);
    // Not before the margin, and before the lease's end (when a reaper could hand the slot on).
    expect(abortedAfter).toBe(3_000 - leasePolicy({ leaseMs: 3_000 }).abortMarginMs);
    expect(errors.length).toBeGreaterThan(0);
    attempt.finish();
  });

  it("keeps an overrunning handler's permit like a lease, with no attempt running, until it is dropped", async () => {
    fakeClock();
    const repo = repository();
    const keeper = new LeaseKeeper(repo, leasePolicy({ leaseMs: 600 }), () => undefined);
    await keeper.keepPermit({ attemptId: 'ran-on', executionId: 'e', keys: ['k'] });
    expect(repo.calls.permits).toEqual([['ran-on']]);
    // Renewed every third of the lease, though the keeper tracks no attempt.
    vi.advanceTimersByTime(leasePolicy({ leaseMs: 600 }).renewAfterMs - 1);
    await keeper.tick();
    expect(repo.calls.permits).toHaveLength(1);
    vi.advanceTimersByTime(1);
    await keeper.tick();
    expect(repo.calls.permits).toEqual([['ran-on'], ['ran-on']]);
    await keeper.dropPermit('ran-on');
    vi.advanceTimersByTime(600);
    await keeper.tick();
    expect(repo.calls.permits).toHaveLength(2);
    expect(repo.calls.dropped).toEqual(['ran-on']);
  });

  it('writes again at the next tick a permit whose first write failed', async () => {
    const repo = repository();
    let fail = true;
    const failing = {
      ...repo,
      keepPermits: async (permits: { attemptId: string }[]) => {
        if (fail) throw new Error('connection terminated');
        return repo.keepPermits(permits);
      },
    };
    const errors: unknown[] = [];
    const keeper = new LeaseKeeper(failing, leasePolicy({ leaseMs: 600 }), (error) => errors.push(error));
    await expect(keeper.keepPermit({ attemptId: 'ran-on', executionId: 'e', keys: ['k'] })).rejects.toThrow(
      'connection terminated',
    );
    fail = false;
    await keeper.tick();
    expect(repo.calls.permits).toEqual([['ran-on']]);
    expect(errors).toEqual([]);
  });
});
