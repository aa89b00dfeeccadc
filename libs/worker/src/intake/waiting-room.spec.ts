import { describe, expect, it } from 'vitest';
import { flowOrder } from '@punctual/planning';
import { wokenForKey, type Promotable, waitBeforeRetryMs, WaitingRoom, wakePassedOn } from './waiting-room.js';

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
    room.add({ taskId: 'a' }, job('a1', promoted));
    room.add({ taskId: 'a' }, job('a2', promoted));
    room.add({ taskId: 'b' }, job('b1', promoted));
    expect(await room.wake({ taskId: 'a' })).toBe(2);
    expect(promoted.sort()).toEqual(['a1', 'a2']);
    expect(room.size).toBe(1);
    expect(await room.wake({ taskId: 'a' })).toBe(0);
  });

  it('brings only the first waiters of a flow-control key forward, by their place', async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    // Same fire_at: the lower id goes first, as in Postgres.
    room.add(
      { flowKey: 'openai', order: flowOrder(3_000, '00000000-0000-4000-8000-000000000001') },
      job('late', promoted),
    );
    room.add(
      { flowKey: 'openai', order: flowOrder(1_000, 'ffffffff-0000-4000-8000-000000000000') },
      job('middle', promoted),
    );
    room.add(
      { flowKey: 'openai', order: flowOrder(1_000, '0fffffff-0000-4000-8000-000000000000') },
      job('early', promoted),
    );
    room.add({ flowKey: 'mail', order: flowOrder(0, '00000000-0000-4000-8000-000000000000') }, job('other', promoted));
    expect(await room.wake({ flowKey: 'openai' }, 1)).toBe(1);
    expect(promoted).toEqual(['early']);
    expect(await room.wake({ flowKey: 'openai' }, 1)).toBe(1);
    expect(promoted).toEqual(['early', 'middle']);
    expect(room.size).toBe(2);
  });

  it('keeps a job in one place: added again, it waits for the new turn only', async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add({ taskId: 'a' }, job('j', promoted));
    room.add({ flowKey: 'k', order: flowOrder(1, 'a') }, job('j', promoted));
    expect(await room.wake({ taskId: 'a' })).toBe(0);
    expect(await room.wake({ flowKey: 'k' }, 1)).toBe(1);
    expect(room.size).toBe(0);
  });

  it("keeps a task's turn apart from a key's room whatever their names", async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add({ taskId: 'flow:k' }, job('task-waiter', promoted));
    room.add({ flowKey: 'k', order: flowOrder(1, 'a') }, job('key-waiter', promoted));
    expect(await room.wake({ flowKey: 'k' })).toBe(1);
    expect(promoted).toEqual(['key-waiter']);
    expect(await room.wake({ taskId: 'flow:k' })).toBe(1);
    expect(promoted).toEqual(['key-waiter', 'task-waiter']);
  });

  it('forgets a job that came back on its own, and shrugs off one that cannot be promoted', async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add({ taskId: 'a' }, job('a1', promoted));
    room.add({ taskId: 'a' }, job('a2', promoted, true));
    room.remove('a1');
    await expect(room.wake({ taskId: 'a' })).resolves.toBe(1);
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

describe('a wake passed on', () => {
  /** A job whose data the wake may tell what it was woken for. */
  const held = (id: string, promoted: string[], fail = false) => {
    const j = { ...job(id, promoted, fail), data: { executionId: id } as object };
    return Object.assign(j, {
      updateData: async (data: object) => {
        j.data = data;
      },
    });
  };

  it("tells the job it brings forward which key's room it was woken for; not a task's turn", async () => {
    const room = new WaitingRoom();
    const forKey = held('for-key', []);
    const forTurn = held('for-turn', []);
    room.add({ flowKey: 'k', order: flowOrder(1, 'a') }, forKey);
    room.add({ taskId: 'a-task-id' }, forTurn);
    await room.wake({ flowKey: 'k' }, 1);
    await room.wake({ taskId: 'a-task-id' });
    expect([forKey.data, forTurn.data]).toEqual([
      { executionId: 'for-key', wokenFor: wokenForKey('k') },
      { executionId: 'for-turn' },
    ]);
  });

  it("skips a key's waiter whose job came back elsewhere (no longer delayed): the word reaches the next", async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add({ flowKey: 'k', order: flowOrder(1, 'a') }, held('taken-elsewhere', promoted, true));
    room.add({ flowKey: 'k', order: flowOrder(2, 'a') }, held('next', promoted));
    room.add({ flowKey: 'k', order: flowOrder(3, 'a') }, held('last', promoted));
    expect(await room.wake({ flowKey: 'k' }, 1)).toBe(1);
    expect(promoted).toEqual(['next']);
    expect(room.size).toBe(1);
  });

  it("goes to the key's next waiter when the woken job did not take the key's room", () => {
    const key = 'namespace-quota:team-a';
    const heldOn = (flowKey: string) => ({
      kind: 'later' as const,
      why: 'held' as const,
      waitsFor: { flowKey, order: '' },
    });
    expect(
      [
        heldOn('its-own-key'),
        { kind: 'parked' as const },
        { kind: 'skipped' as const, reason: 'overlap' as const },
        { kind: 'dropped' as const, why: 'lost' as const },
        { kind: 'moved' as const, handler: 'h', attempt: 1 },
        { kind: 'later' as const, why: 'contended' as const },
      ].map((d) => wakePassedOn(wokenForKey(key), d)),
    ).toEqual(Array(6).fill(key));
    // It took the room, found none after all, or nobody can be served: nothing to pass on.
    expect(
      [
        { kind: 'ended' as const, outcome: 'succeeded' as const },
        heldOn(key),
        { kind: 'later' as const, why: 'unreachable' as const },
      ].map((d) => wakePassedOn(wokenForKey(key), d)),
    ).toEqual([undefined, undefined, undefined]);
    // Not woken for a key: a task's turn, or not woken at all.
    expect([wakePassedOn('a-task-id', { kind: 'parked' }), wakePassedOn(undefined, { kind: 'parked' })]).toEqual([
      undefined,
      undefined,
    ]);
  });
});
