import { describe, expect, it } from 'vitest';
import { type Promotable, waitBeforeRetryMs, WaitingRoom } from './waiting-room.js';

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
