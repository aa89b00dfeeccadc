import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { createSandbox } from '../support/isolation.js';
import { sleep } from '../support/processes.js';
import { insertTasks } from '../support/tasks.js';

/**
 * DESIGN §4 "A new leader fires the rows of its own first plan": a leader plans a stride (5 s)
 * beyond its lookahead, and the rows of its first plan that are not due yet go into its timer like
 * every later plan's — not left for a later sweep to find (with a 100 ms lookahead, a sweep every
 * 2 s would release them up to 2 s late).
 */
describe('a new leader fires its first plan on time', () => {
  let cluster: Cluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
  });

  it('every slot of its first plan is released before its fire_at, none by a later sweep', async () => {
    const sandbox = await createSandbox();
    const db = new pg.Client({ connectionString: sandbox.databaseUrl });
    await db.connect();
    // Due as the leader comes: its first plan covers the slots from the cursor to 5.1 s ahead.
    const first = Math.ceil(Date.now() / 1000) * 1000;
    // `allow`: a noop that runs past the next second on a loaded machine must not skip a slot this
    // test is timing (the overlap rule has its own tests).
    await insertTasks(db, 5, { prefix: 'first-plan', nextRunAt: new Date(first), overlap: 'allow' });
    await db.end();
    cluster = await Cluster.start({
      schedulers: 1,
      workers: 1,
      sandbox,
      env: { LOOKAHEAD_MS: '100', LEADER_TTL_MS: '1000' },
    });
    const c = cluster;
    const elected = (
      await c.waitFor(
        async () => (await c.db.query('SELECT acquired_at FROM scheduler_state WHERE epoch > 0')).rows[0],
        10_000,
        'a leader',
      )
    ).acquired_at.getTime();
    // The slots past the first plan's lookahead, still within its stride: the timer's to fire.
    const [from, to] = [Math.ceil((elected + 1_000) / 1000) * 1000, Math.floor((elected + 5_000) / 1000) * 1000];
    await sleep(Math.max(0, to + 1_000 - Date.now()));
    await c.settle(to);
    const { rows } = await c.db.query(
      `SELECT scheduled_for, fire_at, queued_at, status, skip_reason FROM task_execution WHERE scheduled_for BETWEEN $1 AND $2 ORDER BY scheduled_for`,
      [new Date(from), new Date(to)],
    );
    expect(rows.length).toBe(5 * ((to - from) / 1000 + 1));
    const late = rows.filter((r) => r.queued_at === null || r.queued_at.getTime() > r.fire_at.getTime() + 500);
    const why = (r: (typeof rows)[number]) =>
      r.queued_at === null
        ? `never released (${r.status}${r.skip_reason ? `: ${r.skip_reason}` : ''})`
        : `released ${r.queued_at.getTime() - r.fire_at.getTime()} ms after its fire_at`;
    expect(late.map((r) => `${r.scheduled_for.toISOString()} ${why(r)}`)).toEqual([]);
    expect(rows.map((r) => r.status)).toEqual(rows.map(() => 'succeeded'));
  });
});
