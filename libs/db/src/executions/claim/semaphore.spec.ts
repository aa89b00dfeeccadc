import { describe, expect, it } from 'vitest';
import { Semaphore } from './semaphore.js';

describe('Semaphore', () => {
  it('runs at most `width` tasks at once, the rest in arrival order, a place handed straight on', async () => {
    const gate = new Semaphore(2);
    let open = 0;
    let most = 0;
    const order: number[] = [];
    const releases: (() => void)[] = [];
    const task = (n: number) =>
      gate.run(async () => {
        open += 1;
        most = Math.max(most, open);
        order.push(n);
        await new Promise<void>((resolve) => releases.push(resolve));
        open -= 1;
      });
    const all = [1, 2, 3, 4, 5].map(task);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([1, 2]);
    releases.shift()!();
    // A newcomer arriving as a place is given back waits behind the queue.
    const late = task(6);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([1, 2, 3]);
    while (order.length < 6 || releases.length) {
      releases.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all([...all, late]);
    expect(order).toEqual([1, 2, 3, 4, 5, 6]);
    expect(most).toBe(2);
  });

  it('gives the place back when a task fails', async () => {
    const gate = new Semaphore(1);
    await expect(gate.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(gate.run(async () => 'next')).resolves.toBe('next');
  });
});
