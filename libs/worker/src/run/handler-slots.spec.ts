import { describe, expect, it } from 'vitest';
import { HandlerSlots } from './handler-slots.js';

describe('HandlerSlots', () => {
  it('lends at most its size at once, then serves waiters in arrival order as slots come back', async () => {
    const slots = new HandlerSlots(2);
    const first = await slots.acquire();
    const second = await slots.acquire();
    const served: string[] = [];
    const third = slots.acquire().then((release) => (served.push('third'), release));
    const fourth = slots.acquire().then((release) => (served.push('fourth'), release));
    await Promise.resolve();
    expect([slots.inUse, served]).toEqual([2, []]);
    first();
    first();
    (await third)();
    second();
    await fourth;
    expect(served).toEqual(['third', 'fourth']);
    expect(slots.inUse).toBe(1);
  });
});
