import { describe, expect, it } from 'vitest';
import { AbandonedError, Batcher } from './batcher.js';

/** A batch function that records its batches and answers when `release` is called. */
function gated() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const run = async (inputs: number[]) => {
    batches.push(inputs);
    await new Promise<void>((resolve) => gates.push(resolve));
    return inputs.map((n) => n * 10);
  };
  return { batches, run, release: () => gates.shift()?.() };
}

/** A turn of the event loop: a timer, then the check phase, where the batcher sends (setImmediate) — in that order, whichever Node runs first. */
const tick = () => new Promise((resolve) => setTimeout(() => setImmediate(resolve), 0));

describe('Batcher', () => {
  it('never sends a call given up on while it waited for its batch; the others of that batch go', async () => {
    const g = gated();
    const given = new Set<number>();
    const batcher = new Batcher(
      g.run,
      null,
      100,
      1,
      () => true,
      (n: number) => given.has(n),
    );
    const first = batcher.run(1);
    await tick();
    const waiting = Promise.allSettled([2, 3, 4].map((n) => batcher.run(n)));
    await tick();
    // 3 waits behind the batch in flight, and its caller stops waiting (a claim's answer timed out).
    given.add(3);
    g.release();
    await tick();
    expect(g.batches).toEqual([[1], [2, 4]]);
    g.release();
    expect(await first).toBe(10);
    const settled = await waiting;
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).name))).toEqual([
      20,
      AbandonedError.name,
      40,
    ]);
    // All given up on: nothing is sent at all.
    given.add(5);
    await expect(batcher.run(5)).rejects.toBeInstanceOf(AbandonedError);
    expect(g.batches).toHaveLength(2);
  });

  it('sends the calls of one turn together, and gathers later ones while that batch runs', async () => {
    const g = gated();
    const batcher = new Batcher(g.run, null, 100, 1);
    const results = [1, 2].map((n) => batcher.run(n));
    expect(g.batches).toEqual([]);
    await tick();
    expect(g.batches).toEqual([[1, 2]]);
    results.push(...[3, 4].map((n) => batcher.run(n)));
    await tick();
    expect(g.batches).toEqual([[1, 2]]);
    g.release();
    await tick();
    expect(g.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    g.release();
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40]);
  });

  it('caps a batch and keeps at most maxInFlight batches running', async () => {
    const g = gated();
    const batcher = new Batcher(g.run, null, 2, 2);
    const results = [1, 2, 3, 4, 5, 6, 7].map((n) => batcher.run(n));
    await tick();
    expect(g.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    g.release();
    await tick();
    expect(g.batches).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    g.release();
    await tick();
    expect(g.batches).toEqual([[1, 2], [3, 4], [5, 6], [7]]);
    g.release();
    g.release();
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40, 50, 60, 70]);
  });

  it('rejects every call of a failed batch and goes on with the next', async () => {
    let fail = true;
    const batcher = new Batcher(
      async (inputs: number[]) => {
        if (fail) throw new Error('down');
        return inputs;
      },
      null,
      10,
      1,
    );
    const first = batcher.run(1);
    await expect(first).rejects.toThrow('down');
    fail = false;
    expect(await batcher.run(2)).toBe(2);
  });

  it('retries each call of a failed batch on its own, in arrival order: one bad input fails only its own call', async () => {
    const alone: string[] = [];
    const batcher = new Batcher(
      async (inputs: number[]) => {
        if (inputs.includes(13)) throw new Error('the batch was refused');
        return inputs.map((n) => n * 10);
      },
      async (n: number) => {
        alone.push(`start ${n}`);
        await tick();
        alone.push(`end ${n}`);
        if (n === 13) throw new Error('13 is refused');
        return n * 10;
      },
    );
    const results = await Promise.allSettled([1, 13, 2].map((n) => batcher.run(n)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      10,
      '13 is refused',
      20,
    ]);
    expect(alone).toEqual(['start 1', 'end 1', 'start 13', 'end 13', 'start 2', 'end 2']);
  });

  it('does not retry alone a batch whose error says it may have gone through (a lost connection): every call gets the error', async () => {
    const alone: number[] = [];
    const batcher = new Batcher(
      async () => {
        throw Object.assign(new Error('Connection terminated unexpectedly'), { lost: true });
      },
      async (n: number) => {
        alone.push(n);
        return n;
      },
      100,
      1,
      (error) => !(error as { lost?: boolean }).lost,
    );
    const results = await Promise.allSettled([1, 2].map((n) => batcher.run(n)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(alone).toEqual([]);
  });
});
