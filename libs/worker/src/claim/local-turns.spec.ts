import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalTurns } from './local-turns.js';

const flush = async () => {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
};

describe('LocalTurns', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('attempts of different tasks, or without a task, never wait', async () => {
    const turns = new LocalTurns();
    await turns.take('a');
    await turns.take('b');
    await turns.take(undefined);
    await turns.take(undefined);
  });

  it('the next attempt of a task waits for the one before to be claimed, its short handler to end and its outcome to be written', async () => {
    const turns = new LocalTurns();
    const first = await turns.take('t');
    let second: Awaited<ReturnType<LocalTurns['take']>> | null = null;
    void turns.take('t').then((turn) => (second = turn));
    await flush();
    expect(second).toBeNull();
    first.claimed();
    first.handled();
    await flush();
    // Its handler ended: the outcome write is a round trip away, worth waiting for.
    expect(second).toBeNull();
    first.settle();
    await flush();
    expect(second).not.toBeNull();
  });

  it('a long handler ahead delays the next attempt by the short wait only', async () => {
    vi.useFakeTimers();
    const turns = new LocalTurns();
    const first = await turns.take('t');
    first.claimed();
    let taken = false;
    void turns.take('t').then(() => (taken = true));
    await vi.advanceTimersByTimeAsync(49);
    expect(taken).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(taken).toBe(true);
    first.settle();
  });

  it('an attempt that found nothing to run lets the next go at once', async () => {
    const turns = new LocalTurns();
    const first = await turns.take('t');
    let taken = false;
    void turns.take('t').then(() => (taken = true));
    first.settle();
    await flush();
    expect(taken).toBe(true);
  });
});
