import { describe, expect, it } from 'vitest';
import { flowOrder } from '@punctual/planning';
import { flowTurn, type Promotable, waitBeforeRetryMs, WaitingRoom, wakePassedOn } from './waiting-room.js';

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
    room.add(flowTurn('k'), forKey, flowOrder(1, 'a'));
    room.add('a-task-id', forTurn);
    await room.wake(flowTurn('k'), 1);
    await room.wake('a-task-id');
    expect([forKey.data, forTurn.data]).toEqual([
      { executionId: 'for-key', wokenFor: flowTurn('k') },
      { executionId: 'for-turn' },
    ]);
  });

  it("skips a key's waiter whose job came back elsewhere (no longer delayed): the word reaches the next", async () => {
    const promoted: string[] = [];
    const room = new WaitingRoom();
    room.add(flowTurn('k'), held('taken-elsewhere', promoted, true), flowOrder(1, 'a'));
    room.add(flowTurn('k'), held('next', promoted), flowOrder(2, 'a'));
    room.add(flowTurn('k'), held('last', promoted), flowOrder(3, 'a'));
    expect(await room.wake(flowTurn('k'), 1)).toBe(1);
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
      ].map((d) => wakePassedOn(flowTurn(key), d)),
    ).toEqual(Array(6).fill(key));
    // It took the room, found none after all, or nobody can be served: nothing to pass on.
    expect(
      [
        { kind: 'ended' as const, outcome: 'succeeded' as const },
        heldOn(key),
        { kind: 'later' as const, why: 'unreachable' as const },
      ].map((d) => wakePassedOn(flowTurn(key), d)),
    ).toEqual([undefined, undefined, undefined]);
    // Not woken for a key: a task's turn, or not woken at all.
    expect([wakePassedOn('a-task-id', { kind: 'parked' }), wakePassedOn(undefined, { kind: 'parked' })]).toEqual([
      undefined,
      undefined,
    ]);
  });
});
