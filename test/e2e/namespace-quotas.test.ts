import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { mostAtOnce, mostWithin, oneOffCalling as oneOff } from '../support/invocations.js';

/**
 * A namespace's run quotas (DESIGN §7 wave 4) with real processes: two workers, one scheduler,
 * default policies. What is counted is what the tasks' webhook saw — calls at once, calls per
 * execution — and the starts the quota recorded.
 */
describe("a namespace's run quotas: maxConcurrentRuns and maxRunsPerMinute, across workers", () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 2, api: true });
    expect((await cluster.call('PUT', '/v1/namespaces/team-q', { quotas: { maxConcurrentRuns: 3 } })).status).toBe(201);
    expect((await cluster.call('PUT', '/v1/namespaces/team-r', { quotas: { maxRunsPerMinute: 5 } })).status).toBe(201);
    expect((await cluster.call('PUT', '/v1/namespaces/team-free', {})).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const rows = async (namespace: string) =>
    (
      await cluster.db.query<{
        id: string;
        status: string;
        started_at: Date | null;
        held_at: Date | null;
        quota_namespace: string | null;
        flow_waited_ms: number | null;
      }>(
        `SELECT id, status, started_at, held_at, quota_namespace, flow_waited_ms FROM task_execution WHERE namespace = $1 ORDER BY fire_at, id`,
        [namespace],
      )
    ).rows;
  const allSucceeded = (namespace: string, count: number, timeoutMs: number) =>
    cluster.waitFor(
      async () => {
        const found = await rows(namespace);
        return found.length === count && found.every((r) => r.status === 'succeeded') ? found : null;
      },
      timeoutMs,
      `${count} runs of ${namespace} succeeded`,
    );

  it('maxConcurrentRuns: 12 runs of 1 s (some with a key of their own) never more than 3 at once; another namespace untouched; each runs once', async () => {
    const c = cluster;
    const at = new Date(Date.now() + 4_000);
    const q = (v: number) => c.invocations.url({ delay: 1000, v });
    const created = await c.call('POST', '/v1/tasks:batch?namespace=team-q', {
      tasks: [
        ...Array.from({ length: 9 }, (_, i) => oneOff(`plain-${i}`, q(1), at)),
        // A key of their own with room for all: the namespace's quota still counts them.
        ...Array.from({ length: 3 }, (_, i) =>
          oneOff(`keyed-${i}`, q(1), at, { concurrency: { key: 'partner', limit: 10 } }),
        ),
      ],
    });
    expect(created.status).toBe(200);
    const free = await c.call('POST', '/v1/tasks:batch?namespace=team-free', {
      tasks: Array.from({ length: 5 }, (_, i) => oneOff(`free-${i}`, c.invocations.url({ delay: 1000, v: 2 }), at)),
    });
    expect(free.status).toBe(200);

    // While the rush lasts the namespace shows its quota in use.
    const shown = await c.waitFor(
      async () => {
        const ns = await c.call('GET', '/v1/namespaces/team-q');
        return ns.body.use.maxConcurrentRuns.used === 3 ? ns.body : null;
      },
      15_000,
      'team-q at its maxConcurrentRuns',
    );
    expect(shown.use.maxConcurrentRuns).toEqual({ used: 3, limit: 3 });

    const all = await allSucceeded('team-q', 12, 40_000);
    await allSucceeded('team-free', 5, 10_000);
    const succeeded = c.invocations.succeededBy();
    for (const r of all) expect(succeeded.get(r.id)).toBe(1);
    const calls = (v: number) => c.invocations.calls.filter((call) => call.url.includes(`v=${v}`));
    expect(calls(1)).toHaveLength(12);
    expect(mostAtOnce(calls(1))).toBe(3);
    // Runs held on the quota waited (a wait recorded), and were not failed or missed for it.
    expect(all.filter((r) => r.flow_waited_ms !== null).length).toBeGreaterThanOrEqual(6);
    expect(all.every((r) => r.quota_namespace === 'team-q')).toBe(true);
    // team-free's five ran together while team-q's waited.
    expect(mostAtOnce(calls(2))).toBe(5);
    const lastQ = Math.max(...all.map((r) => r.started_at!.getTime()));
    console.log(`quota: 12 runs of 1 s at 3 at once in ${lastQ - at.getTime() + 1000} ms`);
    expect(lastQ - at.getTime()).toBeGreaterThan(2_500);
  });

  it('maxRunsPerMinute: of 8 runs due together 5 start, 3 wait for the minute (held, not failed), then run; never 6 in a minute', async () => {
    const c = cluster;
    const at = new Date(Date.now() + 3_000);
    const created = await c.call('POST', '/v1/tasks:batch?namespace=team-r', {
      tasks: Array.from({ length: 8 }, (_, i) => oneOff(`r-${i}`, c.invocations.url({ v: 3 }), at)),
    });
    expect(created.status).toBe(200);
    const early = await c.waitFor(
      async () => {
        const found = await rows('team-r');
        return found.filter((r) => r.status === 'succeeded').length === 5 &&
          found.filter((r) => r.held_at !== null).length === 3
          ? found
          : null;
      },
      20_000,
      'five of team-r run and three held',
    );
    // Held on the quota, and still held well after: not run early, not failed, not missed.
    expect(early.filter((r) => r.held_at).every((r) => r.quota_namespace === 'team-r' && r.status !== 'failed')).toBe(
      true,
    );
    const ns = await c.call('GET', '/v1/namespaces/team-r');
    expect(ns.body.use.maxRunsPerMinute).toEqual({ used: 5, limit: 5 });
    // The timeline explains the wait.
    const held = early.find((r) => r.held_at)!;
    const task = (
      await c.db.query<{ name: string }>(
        `SELECT t.name FROM task t JOIN task_execution e ON e.task_id = t.id WHERE e.id = $1`,
        [held.id],
      )
    ).rows[0]!.name;
    const timeline = await c.call('GET', `/v1/tasks/${task.split('/')[1]}/timeline?namespace=team-r`);
    expect(JSON.stringify(timeline.body)).toContain('the run quotas of namespace \\"team-r\\"');

    const all = await allSucceeded('team-r', 8, 90_000);
    const succeeded = c.invocations.succeededBy();
    for (const r of all) expect(succeeded.get(r.id)).toBe(1);
    const { rows: starts } = await c.db.query<{ at: Date }>(`SELECT at FROM quota_start WHERE namespace = 'team-r'`);
    expect(starts).toHaveLength(8);
    expect(
      mostWithin(
        starts.map((s) => s.at.getTime()),
        60_000,
      ),
    ).toBe(5);
    // The quota gauges: each namespace's run quotas beside its use (the nearest twenty only).
    const metrics = await c.waitFor(
      async () => {
        const text = await (await fetch(`${c.schedulers[0]!.url}/metrics`)).text();
        return text.includes('quota="maxRunsPerMinute"') && text;
      },
      15_000,
      'the run quota series',
    );
    expect(metrics).toContain('punctual_namespace_quota_limit{namespace="team-r",quota="maxRunsPerMinute"} 5');
    expect(metrics).toContain('punctual_namespace_quota_limit{namespace="team-q",quota="maxConcurrentRuns"} 3');
    expect(metrics).toMatch(/punctual_namespace_quota_used\{namespace="team-r",quota="maxRunsPerMinute"\} [0-8]/);
    const firstStart = Math.min(...all.map((r) => r.started_at!.getTime()));
    const lastStart = Math.max(...all.map((r) => r.started_at!.getTime()));
    console.log(`quota: 8 runs at 5 a minute, the last ${lastStart - firstStart} ms after the first`);
    expect(lastStart - firstStart).toBeGreaterThanOrEqual(60_000);
  }, 120_000);
});

/**
 * The word that a quota has room, passed along its waiters, across two workers (the job a wake
 * brings forward may be taken by either).
 */
describe("a namespace's run quota: the word that it has room reaches the run that can take it", () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 2, api: true });
    expect((await cluster.call('PUT', '/v1/namespaces/team-w', { quotas: { maxConcurrentRuns: 1 } })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("a run woken for the quota's room that does not take it passes the word on: the next held run starts when the room frees, not at its next poll", async () => {
    const c = cluster;
    const at = Date.now() + 4_000;
    const gone = 40;
    const created = await c.call('POST', '/v1/tasks:batch?namespace=team-w', {
      tasks: [
        oneOff('blocker', c.invocations.url({ delay: 5000, v: 3 }), new Date(at)),
        // Held behind the blocker, then cancelled: each, when woken, has nothing to run.
        ...Array.from({ length: gone }, (_, i) => oneOff(`gone-${i}`, c.invocations.url({ v: 4 }), new Date(at + 500))),
        oneOff('next', c.invocations.url({ v: 5 }), new Date(at + 1_000)),
      ],
    });
    expect(created.status).toBe(200);
    const byName = async () =>
      new Map(
        (
          await c.db.query<{
            name: string;
            id: string;
            status: string;
            held_at: Date | null;
            started_at: Date | null;
            finished_at: Date | null;
          }>(
            `SELECT t.name, e.id, e.status, e.held_at, e.started_at, e.finished_at FROM task_execution e JOIN task t ON t.id = e.task_id WHERE e.namespace = 'team-w'`,
          )
        ).rows.map((r) => [r.name.replace(/^team-w\//, ''), r]),
      );
    // Every run behind the blocker held on the quota (after `gone` runs ahead, `next` asks again on
    // its own only seconds later), then the held runs ahead of it cancelled.
    const held = await c.waitFor(
      async () => {
        const found = await byName();
        return [...found.values()].filter((r) => r.held_at !== null).length === gone + 1 ? found : null;
      },
      20_000,
      'every run behind the blocker held on the quota',
    );
    const nextHeldAt = held.get('next')!.held_at!.getTime();
    for (let i = 0; i < gone; i += 1) {
      const id = (await byName()).get(`gone-${i}`)!.id;
      expect((await c.call('POST', `/v1/executions/${id}/cancel?namespace=team-w`)).status).toBe(200);
    }
    const runs = await c.waitFor(
      async () => {
        const found = await byName();
        return found.get('next')?.status === 'succeeded' && found.get('blocker')?.status === 'succeeded' ? found : null;
      },
      40_000,
      'the blocker and the next run to succeed',
    );
    const blocker = runs.get('blocker')!;
    const next = runs.get('next')!;
    expect(blocker.finished_at!.getTime()).toBeLessThan(next.started_at!.getTime());
    const afterRoom = next.started_at!.getTime() - blocker.finished_at!.getTime();
    console.log(
      `the next held run started ${afterRoom} ms after the room freed (its own next ask: ${Math.round((nextHeldAt + 1_000 + 250 * gone - blocker.finished_at!.getTime()) / 100) / 10} s after)`,
    );
    // Woken through the cancelled runs ahead of it, one after another, as the room freed — not
    // brought back by its own poll (1 s + 250 ms for each run held ahead of it after it was held).
    expect(afterRoom).toBeLessThan(3_000);
    expect([...runs.values()].filter((r) => r.status === 'cancelled')).toHaveLength(gone);
    expect(c.invocations.calls.filter((call) => call.url.includes('v=4'))).toHaveLength(0);
  }, 90_000);
});
