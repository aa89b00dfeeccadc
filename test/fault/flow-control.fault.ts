import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { mostAtOnce, mostWithin, oneOffCalling as oneOff } from '../support/invocations.js';
import { OwnRedis } from '../support/redis-server.js';

/**
 * Flow control with real processes (DESIGN §5): two workers, one scheduler, a Redis of the test's
 * own (FLUSHALL touches nobody else), default policies but for the keys. What is counted is what
 * the tasks' webhook saw: calls at once, calls per window, calls per execution.
 */
describe('fault: flow control — concurrency keys and rate limits shared across tasks', () => {
  let cluster: Cluster;
  let redis: OwnRedis;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    cluster = await Cluster.start({
      schedulers: 1,
      workers: 2,
      api: true,
      env: { REDIS_URL: redis.url, LEASE_MS: '3000' },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
    await redis?.stop();
  });

  const rows = async (prefix: string) =>
    (
      await cluster.db.query(
        `SELECT id, task_name, status, attempt, worker_id, fire_at, started_at, finished_at, flow_waited_ms FROM task_execution WHERE task_name LIKE $1 ORDER BY fire_at, id`,
        [`${prefix}%`],
      )
    ).rows as {
      id: string;
      task_name: string;
      status: string;
      attempt: number;
      worker_id: string;
      fire_at: Date;
      started_at: Date;
      finished_at: Date;
      flow_waited_ms: number | null;
    }[];
  /** Every one of `count` runs named `prefix…` succeeded (none missing: the planner may not have made them all yet). */
  const allSucceeded = (prefix: string, count: number, timeoutMs: number) =>
    cluster.waitFor(
      async () => {
        const found = await rows(prefix);
        return found.length === count && found.every((r) => r.status === 'succeeded') ? found : null;
      },
      timeoutMs,
      `${count} runs of ${prefix}* succeeded`,
    );
  const callsOf = (v: number) =>
    cluster.invocations.calls.filter((c) => c.url.includes(`v=${v}&`) || c.url.endsWith(`v=${v}`));

  it('a concurrency key, a rate key, another key and tasks without one, all due at once: each limit holds, nothing waits on another key, every run succeeds once', async () => {
    const c = cluster;
    const at = new Date(Date.now() + 4_000);
    const tasks = [
      // 30 one-offs of 1 s sharing 3 permits; a 2 s maxDelay that the ~10 s wait must not trip.
      ...Array.from({ length: 30 }, (_, i) =>
        oneOff(`conc-${i}`, c.invocations.url({ delay: 1000, v: 1 }), at, {
          concurrency: { key: 'partner-api', limit: 3 },
          maxDelay: '2s',
        }),
      ),
      // 20 sharing 5 starts a second, 100 ms apart: they wait in fire_at order.
      ...Array.from({ length: 20 }, (_, i) =>
        oneOff(`rate-${String(i).padStart(2, '0')}`, c.invocations.url({ v: 2 }), new Date(at.getTime() + 100 * i), {
          rateLimit: { key: 'mail-relay', limit: 5, per: '1s' },
        }),
      ),
      // Another key with room, and no key at all: they start on time whatever the others wait for.
      ...Array.from({ length: 3 }, (_, i) =>
        oneOff(`other-${i}`, c.invocations.url({ v: 3 }), at, { concurrency: { key: 'other', limit: 5 } }),
      ),
      ...Array.from({ length: 3 }, (_, i) => oneOff(`free-${i}`, c.invocations.url({ v: 4 }), at, {})),
    ];
    const created = await c.call('POST', '/v1/tasks:batch', { tasks });
    expect(created.status).toBe(200);

    // While the rush lasts the cluster view lists the busiest key, at its limit, with runs waiting.
    const busy = await c.waitFor(
      async () => {
        const view = await c.call('GET', '/v1/cluster');
        const key = (view.body.flow as { key: string; running: number; waiting: number }[]).find(
          (k) => k.key === 'partner-api',
        );
        return key && key.running === 3 && key.waiting > 10 ? key : null;
      },
      15_000,
      'partner-api at its limit with runs waiting',
    );
    expect(busy.running).toBe(3);

    const all = await allSucceeded('', 56, 40_000);
    // Once each, as the webhook saw it.
    const succeeded = c.invocations.succeededBy();
    for (const r of all) expect(succeeded.get(r.id), r.task_name).toBe(1);
    expect(c.invocations.calls).toHaveLength(56);

    // At most 3 at once — and 3 were used, by both workers.
    expect(mostAtOnce(callsOf(1))).toBe(3);
    const conc = all.filter((r) => r.task_name.startsWith('conc-'));
    expect(new Set(conc.map((r) => r.worker_id)).size).toBe(2);
    // Held ~9 s with a 2 s maxDelay: not missed, not late; the start lag shows the wait.
    const lastStart = Math.max(...conc.map((r) => r.started_at.getTime()));
    expect(lastStart - at.getTime()).toBeGreaterThan(8_000);

    // No window of 1 s at the webhook holds more than 5 starts, and the runs went in fire_at order.
    const rate = all.filter((r) => r.task_name.startsWith('rate-'));
    // Starts as the key records them when it lets a run go (the webhook's arrival times would add
    // the network's jitter, which a busy machine stretches past the window).
    // A start taken over after its lease ran out (its attempt never ran) stays in the window: each run
    // has at least one, and the window holds them all.
    const { rows: starts } = await c.db.query<{ at: Date; execution_id: string }>(
      `SELECT at, execution_id FROM flow_start WHERE key = 'mail-relay'`,
    );
    expect(new Set(starts.map((s) => s.execution_id))).toEqual(new Set(rate.map((r) => r.id)));
    expect(
      mostWithin(
        starts.map((s) => s.at.getTime()),
        1_000,
      ),
    ).toBe(5);
    // At most five start in the first window; the runs that found it full were held (a wait is
    // recorded) and were let go in fire_at order. Which runs reach the key first is the workers'
    // race — on a busy machine one due early may come to the claim after one due later — so the
    // order is judged among the held runs, by the wait each recorded, not by a start time.
    const held = rate.filter((r) => r.flow_waited_ms !== null);
    expect(held.length).toBeGreaterThanOrEqual(rate.length - 5 * 2);
    const heldByStart = [...held]
      .sort((a, b) => a.started_at.getTime() - b.started_at.getTime())
      .map((r) => r.task_name);
    expect(heldByStart).toEqual(held.map((r) => r.task_name));
    expect(Math.max(...rate.map((r) => r.started_at.getTime())) - at.getTime()).toBeGreaterThan(2_500);

    // Another key and no key: on time while partner-api and mail-relay waited — judged by order,
    // each started before the first run partner-api held back got its permit (when one of the first
    // three, 1 s long, ended). The start lags are printed below, not judged.
    const firstHeldStart = conc.map((r) => r.started_at.getTime()).sort((a, b) => a - b)[3]!;
    for (const r of all.filter((r) => /^(other|free)-/.test(r.task_name)))
      expect(r.started_at.getTime(), r.task_name).toBeLessThan(firstHeldStart);
    console.log(
      `flow: 30 runs on 3 permits in ${lastStart - at.getTime() + 1000} ms; 20 at 5/s in ${Math.max(...rate.map((r) => r.started_at.getTime())) - at.getTime()} ms; ` +
        `others' start lag ≤ ${Math.max(...all.filter((r) => /^(other|free)-/.test(r.task_name)).map((r) => r.started_at.getTime() - r.fire_at.getTime()))} ms`,
    );
  });

  it('kill -9 a worker mid-run: its permit is bound to its lease, so the key moves on once the lease ends; every run succeeds once', async () => {
    const c = cluster;
    const at = new Date(Date.now() + 3_000);
    const tasks = Array.from({ length: 4 }, (_, i) =>
      oneOff(`crash-${i}`, c.invocations.url({ delay: 2000, v: 5 }), at, {
        concurrency: { key: 'one-at-a-time', limit: 1 },
      }),
    );
    expect((await c.call('POST', '/v1/tasks:batch', { tasks })).status).toBe(200);
    const first = await c.waitFor(
      async () => (await rows('crash-')).find((r) => r.status === 'running'),
      15_000,
      'the first run',
    );
    await c.waitFor(async () => c.invocations.callsBy().get(first.id) === 1, 10_000, 'its call');
    const worker = c.workers.find((w) => `${w.label}-${w.port}` === first.worker_id)!;
    const killedAt = Date.now();
    worker.signal('SIGKILL');
    await c.add('worker');

    const all = await allSucceeded('crash-', 4, 40_000);
    // The killed run's call, then its second attempt's; one call for each of the others.
    expect(c.invocations.callsBy().get(first.id)).toBe(2);
    for (const r of all.filter((r) => r.id !== first.id)) expect(c.invocations.callsBy().get(r.id)).toBe(1);
    expect(all.find((r) => r.id === first.id)!.attempt).toBe(2);
    // The calls that completed never overlapped (the killed call's connection closed with its worker).
    expect(mostAtOnce(callsOf(5))).toBe(1);
    // The permit came back with the lease (3 s), not never.
    const nextStart = Math.min(...all.map((r) => r.started_at.getTime()).filter((t) => t > killedAt));
    console.log(
      `flow: kill -9 holding the only permit → the key's next start ${nextStart - killedAt} ms later (LEASE_MS=3000)`,
    );
    expect(nextStart - killedAt).toBeLessThan(15_000);
  });

  it('FLUSHALL while runs are held: Postgres keeps their place, the relay brings their jobs back, each runs once and the limit holds', async () => {
    const c = cluster;
    const at = new Date(Date.now() + 3_000);
    const tasks = Array.from({ length: 5 }, (_, i) =>
      oneOff(`flush-${i}`, c.invocations.url({ delay: 1000, v: 6 }), at, { concurrency: { key: 'flushed', limit: 1 } }),
    );
    expect((await c.call('POST', '/v1/tasks:batch', { tasks })).status).toBe(200);
    await c.waitFor(
      async () => {
        const { rows: held } = await c.db.query(
          `SELECT count(*)::int AS n FROM task_execution WHERE task_name LIKE 'flush-%' AND held_at IS NOT NULL AND status <> 'running'`,
        );
        return held[0].n >= 3;
      },
      15_000,
      'runs held',
    );
    await redis.command('FLUSHALL');

    const all = await allSucceeded('flush-', 5, 60_000);
    for (const r of all) expect(c.invocations.succeededBy().get(r.id)).toBe(1);
    expect(callsOf(6)).toHaveLength(5);
    expect(mostAtOnce(callsOf(6))).toBe(1);
  });

  it('a held run holds no handler slot: a worker of two slots, one busy on the key and four held, still starts a task without a key on time', async () => {
    const c = cluster;
    // One worker alone with two handler slots: the cluster's own workers stop (this is the last test), a narrow one starts.
    await Promise.all(c.workers.map((w) => w.stop('SIGTERM')));
    await c.add('worker', { WORKER_CONCURRENCY: '2' });
    const at = new Date(Date.now() + 3_000);
    const tasks = [
      ...Array.from({ length: 5 }, (_, i) =>
        oneOff(`slots-${i}`, c.invocations.url({ delay: 1500, v: 7 }), at, {
          concurrency: { key: 'slow-partner', limit: 1 },
        }),
      ),
      oneOff('slots-free', c.invocations.url({ v: 8 }), new Date(at.getTime() + 2_000), {}),
    ];
    expect((await c.call('POST', '/v1/tasks:batch', { tasks })).status).toBe(200);
    const all = await allSucceeded('slots-', 6, 30_000);
    const free = all.find((r) => r.task_name === 'slots-free')!;
    // Four keyed runs were held (and one running) when it came due: it started at once all the same.
    const heldThen = all.filter((r) => r.task_name !== 'slots-free' && r.started_at > free.started_at).length;
    expect(heldThen).toBeGreaterThanOrEqual(3);
    // …and before the key's next run: it did not wait for a slot the held runs would have kept.
    const keyedAfter = all.filter(
      (r) => r.task_name !== 'slots-free' && r.started_at.getTime() >= free.fire_at.getTime(),
    );
    expect(free.started_at.getTime()).toBeLessThan(Math.min(...keyedAfter.map((r) => r.started_at.getTime())));
    expect(mostAtOnce(callsOf(7))).toBe(1);
    for (const r of all) expect(c.invocations.succeededBy().get(r.id)).toBe(1);
  });
});
