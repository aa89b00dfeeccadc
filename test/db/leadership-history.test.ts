import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerStateRepository, unledPeriods } from '../../libs/db/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

/**
 * Each shard's leadership history: every epoch taken is a row (who, from when), kept alive by the
 * leader's heartbeat and ended by a clean step-down; the spans between leaderships are the times no
 * scheduler led the shard.
 */
describe("a shard's leadership history", () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let state: SchedulerStateRepository;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
    state = db.state;
    await state.adoptShardCount(2);
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  it('records each epoch taken, its heartbeats and a clean step-down, per shard; a fenced-out leader beats no more', async () => {
    const start = new Date();
    const first = await state.bumpEpoch('scheduler-a', 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await state.heartbeat({ shard: 1, shards: 2, epoch: first })).toBe(true);
    await state.release({ shard: 1, shards: 2, epoch: first });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Another scheduler takes the shard; the first, frozen meanwhile, is fenced out.
    const second = await state.bumpEpoch('scheduler-b', 1);
    expect(await state.heartbeat({ shard: 1, shards: 2, epoch: first })).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await state.heartbeat({ shard: 1, shards: 2, epoch: second })).toBe(true);
    // Shard 0 keeps its own history.
    await state.bumpEpoch('scheduler-c', 0);

    const history = await state.leaderships(1, start, new Date());
    expect(history.map((l) => [l.epoch, l.leaderId, l.released])).toEqual([
      [first, 'scheduler-a', true],
      [second, 'scheduler-b', false],
    ]);
    const [a, b] = history;
    expect(a!.to.getTime() - a!.from.getTime()).toBeGreaterThanOrEqual(40);
    expect(b!.from.getTime() - a!.to.getTime()).toBeGreaterThanOrEqual(250);
    expect(b!.to.getTime()).toBeGreaterThan(b!.from.getTime());
    expect((await state.leaderships(0, start, new Date())).map((l) => l.leaderId)).toEqual(['scheduler-c']);
    // The shard was unled between a's step-down and b's start.
    const gaps = unledPeriods(history, a!.from, b!.to, 1_000);
    expect(gaps).toEqual([{ from: a!.to, to: b!.from }]);
    // A range before any of it finds none.
    expect(await state.leaderships(1, new Date(start.getTime() - 60_000), new Date(start.getTime() - 1_000))).toEqual(
      [],
    );
  });
});
