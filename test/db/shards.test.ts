import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma, shardOfSql } from '../../libs/db/src/index.js';
import { shardOf, shardShare } from '../../libs/planning/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';
import { insertTasks } from '../support/tasks.js';

/**
 * DESIGN §11: a task's shard is a stable hash of its id, computed alike by TypeScript and by
 * Postgres (the leader's statements select their shard's rows in SQL), and a leader's statements
 * see only its shard's tasks.
 */
describe('the shard of a task', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = await openRepositories(sandbox.config());
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  it('is the same number in TypeScript and in Postgres, for every shard count, and spreads ids evenly', async () => {
    const ids = Array.from({ length: 2_000 }, () => randomUUID());
    for (const shards of [1, 2, 3, 8, 16, 256]) {
      const rows = await db.prisma.$queryRaw<{ id: string; shard: number }[]>`
        SELECT id::text AS id, ${shardOfSql(Prisma.sql`id`, shards)} AS shard FROM unnest(${ids}::uuid[]) AS u(id)`;
      expect(rows.map((r) => [r.id, r.shard])).toEqual(ids.map((id) => [id, shardOf(id, shards)]));
      if (shards <= 16) {
        const counts = Array.from({ length: shards }, (_, k) => rows.filter((r) => r.shard === k).length);
        // 2,000 ids: every shard within ±40 % of an even split.
        for (const n of counts) expect(Math.abs(n - ids.length / shards)).toBeLessThan(0.4 * (ids.length / shards));
      }
    }
    // An execution of a deleted task (no task id) belongs to shard 0.
    const [none] = await db.prisma.$queryRaw<
      { shard: number }[]
    >`SELECT ${shardOfSql(Prisma.sql`NULL::uuid`, 8)} AS shard`;
    expect(none!.shard).toBe(0);
  });

  it('is stable: known ids keep their shards', () => {
    expect(shardOf('00000000-0000-4000-8000-000000000000', 8)).toBe(shardOf('00000000-0000-4000-8000-000000000000', 8));
    expect(shardOf('00000000-0000-4000-8000-000000000000', 1)).toBe(0);
    expect(shardOf('6F9619FF-8B86-4011-B42D-00C04FC964FF', 16)).toBe(
      shardOf('6f9619ff-8b86-4011-b42d-00c04fc964ff', 16),
    );
  });

  it('each scheduler leads ceil(shards / live schedulers)', () => {
    expect(shardShare(8, 3)).toBe(3);
    expect(shardShare(8, 2)).toBe(4);
    expect(shardShare(8, 0)).toBe(8);
    expect(shardShare(1, 5)).toBe(1);
    expect(shardShare(16, 3)).toBe(6);
  });

  it("a leader's planning and repair see only its shard's tasks", async () => {
    const shards = 4;
    const client = new pg.Client({ connectionString: sandbox.databaseUrl });
    await client.connect();
    const ids = await insertTasks(client, 40, { prefix: 'sharded', nextRunAt: new Date(Date.now() - 500) });
    const due = new Date(Date.now() + 2_000);
    for (let shard = 0; shard < shards; shard += 1) {
      const fence = { shard, shards, epoch: 0n };
      const locked = await db.prisma.$transaction((tx) => db.cursors.lockDue(due, due, 1_000, tx, fence));
      const mine = ids.filter((id) => shardOf(id, shards) === shard).sort();
      expect(
        locked
          .map((t) => t.id)
          .filter((id) => ids.includes(id))
          .sort(),
      ).toEqual(mine);
      expect(await db.cursors.anyDue(due, due, fence)).toBe(mine.length > 0);
    }
    await client.end();
  });
});
