import { describe, expect, it } from 'vitest';
import { flowOrder } from '@punctual/planning';
import { flowTurn, type Promotable, waitBeforeRetryMs, WaitingRoom } from './waiting-room.js';

const job = (id: string, promoted: string[], fail = false): Promotable => ({
  id,
  promote: async () => {
    if (fail) throw new Error('Job is not in the delayed state');
    promoted.push(id);
  },
});

describe('WaitingRoom', () => {
  it("brings a task's waiters forward when its turn is free, and only that task's", async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add('a', job('a1', promoted));
    room.add('a', job('a2', promoted));
    room.add('b', job('b1', promoted));
    expect(await room.wake('a')).toBe(2);
    expect(promoted.sort()).toEqual(['a1', 'a2']);
    expect(room.size).toBe(1);
    expect(await room.wake('a')).toBe(0);
  });

  it('brings only the first waiters of a flow-control key forward, by their place', async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    // Same fire_at: the lower id goes first, as in Postgres.
    room.add(flowTurn('openai'), job('late', promoted), flowOrder(3_000, '00000000-0000-4000-8000-000000000001'));
    room.add(flowTurn('openai'), job('middle', promoted), flowOrder(1_000, 'ffffffff-0000-4000-8000-000000000000'));
    room.add(flowTurn('openai'), job('early', promoted), flowOrder(1_000, '0fffffff-0000-4000-8000-000000000000'));
    room.add(flowTurn('mail'), job('other', promoted), flowOrder(0, '00000000-0000-4000-8000-000000000000'));
    expect(await room.wake(flowTurn('openai'), 1)).toBe(1);
    expect(promoted).toEqual(['early']);
    expect(await room.wake(flowTurn('openai'), 1)).toBe(1);
    expect(promoted).toEqual(['early', 'middle']);
    expect(room.size).toBe(2);
  });

  it('keeps a job in one place: added again, it waits for the new turn only', async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add('a', job('j', promoted));
    room.add(flowTurn('k'), job('j', promoted), flowOrder(1, 'a'));
    expect(await room.wake('a')).toBe(0);
    expect(await room.wake(flowTurn('k'), 1)).toBe(1);
    expect(room.size).toBe(0);
  });

  it('forgets a job that came back on its own, and shrugs off one that cannot be promoted', async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add('a', job('a1', promoted));
    room.add('a', job('a2', promoted, true));
    room.remove('a1');
    await expect(room.wake('a')).resolves.toBe(1);
    expect(promoted).toEqual([]);
  });
});

describe('waitBeforeRetryMs', () => {
  it('asks again soon at first and backs off to a quarter of a second', () => {
    expect(waitBeforeRetryMs(0)).toBe(20);
    expect(waitBeforeRetryMs(2_000)).toBe(100);
    expect(waitBeforeRetryMs(600_000)).toBe(250);
  });
});
