import { describe, expect, it } from 'vitest';
import { RunCapacity } from './run-capacity.js';

describe('RunCapacity', () => {
  it('lends at most its size at once, then serves waiters in arrival order as places come back', async () => {
    const capacity = new RunCapacity(2);
    const first = await capacity.acquire();
    const second = await capacity.acquire();
    const served: string[] = [];
    const third = capacity.acquire().then((release) => (served.push('third'), release));
    const fourth = capacity.acquire().then((release) => (served.push('fourth'), release));
    await Promise.resolve();
    expect([capacity.inUse, served]).toEqual([2, []]);
    first();
    first();
    (await third)();
    second();
    await fourth;
    expect(served).toEqual(['third', 'fourth']);
    expect(capacity.inUse).toBe(1);
  });
});
