import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';

/**
 * A handler that does not honour its signal runs on after its attempt timed out or was cancelled.
 * Its handler slot is held, and its key's permit — its run stays `running` after a timeout; after
 * a cancel the permit outlives the row — until it really ends: no second run of the key starts beside it.
 */
describe('a handler that runs on after its attempt ended', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("keeps its key's permit until it ends: a key of limit 1 never has two handlers really running, and the overrun is counted", async () => {
    const at = new Date(Date.now() + 2_000).toISOString();
    // Each sleeps 3 s whatever its signal says; the attempt times out after 1 s.
    const policy = { concurrency: { key: 'one-by-one', limit: 1 }, timeout: '1s', retry: { attempts: 1 } };
    for (const name of ['overrun-a', 'overrun-b']) {
      const res = await cluster.call('POST', '/v1/tasks', {
        name,
        handler: 'sleep',
        payload: { ms: 3_000, ignoreAbort: true },
        schedule: { at },
        policy,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const worker = cluster.workers[0]!;
    const gauge = async () =>
      Number(
        /^punctual_handlers_overrunning (\d+)/m.exec(await (await fetch(`${worker.url}/metrics`)).text())?.[1] ?? -1,
      );
    // Between its timeout (1 s) and its real end (3 s), the first handler is counted as overrunning.
    await cluster.waitFor(async () => (await gauge()) === 1, 15_000, 'a handler counted as overrunning');
    const ended = await cluster.waitFor(
      async () => {
        const rows = [...(await cluster.executionsOf('overrun-a')), ...(await cluster.executionsOf('overrun-b'))];
        return rows.length === 2 && rows.every((r) => r.status === 'dead') && rows;
      },
      30_000,
      'both runs to end',
    );
    const [first, second] = ended.sort((a, b) => a.started_at!.getTime() - b.started_at!.getTime());
    console.log(
      `second run started ${second!.started_at!.getTime() - first!.started_at!.getTime()} ms after the first (whose handler sleeps 3 s, timed out at 1 s)`,
    );
    // The first handler really ran 3 s: the second started only after it.
    expect(second!.started_at!.getTime() - first!.started_at!.getTime()).toBeGreaterThanOrEqual(2_900);
    expect(first!.error).toMatch(/timed out after 1000 ms/);
    expect(await gauge()).toBe(0);
  });

  it("keeps its key's permit after its run is cancelled: the key's next run starts only when the handler really ends", async () => {
    const soon = Date.now() + 2_000;
    // The first sleeps 4 s whatever its signal says and is cancelled as soon as it runs; the second, due
    // half a second later, waits for the key.
    const policy = { concurrency: { key: 'cancelled-one-by-one', limit: 1 }, retry: { attempts: 1 } };
    for (const [name, ms, at] of [
      ['cancelled-a', 4_000, soon],
      ['cancelled-b', 100, soon + 500],
    ] as const) {
      const res = await cluster.call('POST', '/v1/tasks', {
        name,
        handler: 'sleep',
        payload: { ms, ignoreAbort: true },
        schedule: { at: new Date(at).toISOString() },
        policy,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const first = await cluster.waitFor(
      async () => (await cluster.executionsOf('cancelled-a')).find((r) => r.status === 'running') ?? false,
      15_000,
      'the first run of the key to start',
    );
    const cancel = await cluster.call('POST', `/v1/executions/${first.id}/cancel`);
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
    const ended = await cluster.waitFor(
      async () => {
        const rows = [...(await cluster.executionsOf('cancelled-a')), ...(await cluster.executionsOf('cancelled-b'))];
        return rows.length === 2 && rows.every((r) => r.status === 'cancelled' || r.status === 'succeeded') && rows;
      },
      30_000,
      'both runs to end',
    );
    const second = ended.find((r) => r.id !== first.id)!;
    const gap = second.started_at!.getTime() - first.started_at!.getTime();
    console.log(`second run started ${gap} ms after the cancelled first (whose handler sleeps 4 s, cancelled at once)`);
    expect(ended.find((r) => r.id === first.id)!.status).toBe('cancelled');
    expect(gap).toBeGreaterThanOrEqual(3_900);
    // The permit was given back when the handler ended, not left to lapse with its lease (30 s).
    expect(gap).toBeLessThan(10_000);
    const { rows } = await cluster.db.query('SELECT count(*)::int AS n FROM overrun_permit');
    expect(rows).toEqual([{ n: 0 }]);
  });
  it("keeps its namespace's maxConcurrentRuns permit after its run is cancelled: no key of its own, the quota still counts it", async () => {
    expect(
      (await cluster.call('PUT', '/v1/namespaces/one-at-a-time', { quotas: { maxConcurrentRuns: 1 } })).status,
    ).toBe(201);
    const soon = Date.now() + 2_000;
    for (const [name, ms, at] of [
      ['quota-a', 4_000, soon],
      ['quota-b', 100, soon + 500],
    ] as const) {
      const res = await cluster.call('POST', '/v1/tasks?namespace=one-at-a-time', {
        name,
        handler: 'sleep',
        payload: { ms, ignoreAbort: true },
        schedule: { at: new Date(at).toISOString() },
        policy: { retry: { attempts: 1 } },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const rowsOf = async (name: string) =>
      (
        await cluster.db.query<{ id: string; status: string; started_at: Date | null }>(
          'SELECT id, status, started_at FROM task_execution WHERE task_name = $1',
          [`one-at-a-time/${name}`],
        )
      ).rows;
    const first = await cluster.waitFor(
      async () => (await rowsOf('quota-a')).find((r) => r.status === 'running') ?? false,
      15_000,
      'the first run of the namespace to start',
    );
    const cancel = await cluster.call('POST', `/v1/executions/${first.id}/cancel?namespace=one-at-a-time`);
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
    const second = await cluster.waitFor(
      async () => (await rowsOf('quota-b')).find((r) => r.status === 'succeeded') ?? false,
      30_000,
      'the second run to end',
    );
    const gap = second.started_at!.getTime() - first.started_at!.getTime();
    console.log(`second run of the namespace started ${gap} ms after the cancelled first (its handler sleeps 4 s)`);
    expect(gap).toBeGreaterThanOrEqual(3_900);
    expect(gap).toBeLessThan(10_000);
    await cluster.waitFor(
      async () => (await cluster.db.query('SELECT 1 FROM overrun_permit')).rows.length === 0,
      10_000,
      'the permits to be given back',
    );
  });
});
