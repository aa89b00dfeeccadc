import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useRepositorySandbox } from '../support/api-sandbox.js';
import { insertTasks } from '../support/tasks.js';

/**
 * The leader's sweep takes planned rows into its timer page by page. A campaign puts thousands of
 * rows on one instant: a page must end inside them and the next go on with the rest, not skip
 * every row due at the instant the page ended on (left to the relay, a grace late and slowly).
 * The reaper retries an expired attempt by the definition its execution is pinned to.
 */
describe("the leader's sweep and reaper", () => {
  const ctx = useRepositorySandbox();

  it('pages by (fire_at, id): rows tied at a page boundary all come, each once, in order', async () => {
    const [taskId] = await insertTasks(ctx.client, 1, { prefix: 'crowd', nextRunAt: new Date(Date.now() + 3_600_000) });
    const instant = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1_000);
    const earlier = new Date(instant.getTime() - 500);
    const ids = Array.from({ length: 11 }, () => randomUUID());
    // One row half a second earlier, ten on the one instant (one manual slot per row: scheduled_for differs).
    for (const [i, id] of ids.entries()) {
      await ctx.client.query(
        `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, task_version, status, trigger)
         VALUES ($1, $2, 'crowd-0', $3, $4, 1, 'scheduled', 'manual')`,
        [id, taskId, new Date(instant.getTime() + i), i === 0 ? earlier : instant],
      );
    }
    const fence = { shard: 0, shards: 1, epoch: 0n };
    const before = new Date(instant.getTime() + 60_000);
    const seen: string[] = [];
    let after: Date | { fireAt: Date; id: string } | null = new Date(earlier.getTime() - 1);
    for (let page = 0; page < 10; page += 1) {
      const due = await ctx.db.leader.listScheduledDue(after, before, 3, fence, [taskId!]);
      seen.push(...due.map((r) => r.id));
      if (due.length < 3) break;
      after = due.at(-1)!;
    }
    expect(seen).toHaveLength(ids.length);
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(seen[0]).toBe(ids[0]);
    // In (fire_at, id) order: the tied ones by id.
    expect(seen.slice(1)).toEqual([...ids.slice(1)].sort());
  });

  it("an expired attempt of an execution an edit pinned is retried by the pinned attempts, not the edited task's", async () => {
    const [taskId] = await insertTasks(ctx.client, 1, {
      prefix: 'pinned',
      nextRunAt: new Date(Date.now() + 3_600_000),
    });
    // The task now allows one attempt; the execution started when it allowed three, and was pinned by the edit.
    await ctx.client.query(`UPDATE task SET max_attempts = 1 WHERE id = $1`, [taskId]);
    const [pinned, unpinned] = [randomUUID(), randomUUID()];
    for (const [id, definition] of [
      [pinned, { maxAttempts: 3 }],
      [unpinned, null],
    ] as const) {
      await ctx.client.query(
        `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, task_version, status, trigger,
           attempt, attempt_id, started_at, lease_until, pinned_definition, exclusive)
         VALUES ($1, $2, 'pinned-0', now() - interval '1 minute' + $3 * interval '1 ms', now() - interval '1 minute', 1,
           'running', 'manual', 1, gen_random_uuid(), now() - interval '50 s', now() - interval '1 s', $4, false)`,
        [id, taskId, id === pinned ? 0 : 1, definition === null ? null : JSON.stringify(definition)],
      );
    }
    const reaped = await ctx.db.leader.reapExpiredLeases(10, { shard: 0, shards: 1, epoch: 0n });
    const status = Object.fromEntries(reaped.map((r) => [r.id, r.status]));
    expect(status).toEqual({ [pinned]: 'retrying', [unpinned]: 'dead' });
  });
});
