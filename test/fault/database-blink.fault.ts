import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { OwnPostgres, ownPostgresUnavailable } from '../support/postgres-server.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';
import { openSandbox } from '../support/sandbox.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** Tasks every second whose webhook answers after 2 s: at any instant most of them are in a handler. */
const TASKS = 200;
/** Every-second tasks whose webhook answers after 100 ms. */
const QUICK_TASKS = 50;
const HANDLER_MS = 2_000;
/** How long the database stays away: longer than a success write used to try, shorter than the lease (30 s). */
const BLINK_MS = 10_000;

let cluster: Cluster | undefined;
let server: OwnPostgres | undefined;
let proxy: TcpProxy | undefined;

/**
 * Every slot of the window, counted at the webhook: none lost, none whose handler ran twice —
 * a handler that returned while the database was away has its success written once it is back,
 * not re-run by the reaper when its lease runs out.
 */
async function expectEverySlotOnce(c: Cluster, ids: string[], firstSlot: number, what: string): Promise<void> {
  await sleep(2_000);
  const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
  // Longer than the lease (30 s): a row left running would be taken over and run again in here.
  // Three leases: 100 every-second tasks draining after two 10 s outages on a loaded 2-core machine.
  await c.settle(lastSlot, 90_000);
  const report = await c.report(ids, firstSlot, lastSlot);
  console.log(
    `${what}: ${report.expected} slots: ${JSON.stringify(report.byStatus)}, ${report.invoked} handler runs, max attempt ${report.maxAttempt}`,
  );
  expectEveryPromiseKept(report);
}

/** Waits until `TASKS / 2` or more handlers are in flight, newly started since the last wait. */
async function whileHandlersRun(c: Cluster): Promise<void> {
  const since = Date.now();
  await c.waitFor(
    async () => {
      const open = c.invocations.calls.filter((call) => call.endedAt === null && call.at >= since - HANDLER_MS).length;
      return c.invocations.calls.some((call) => call.at >= since) && open >= TASKS / 2;
    },
    40_000,
    'handlers in flight',
  );
}

/**
 * What the roles say while Postgres is away, polled every half second for `ms`: which answered
 * `/health/ready` with 503, and the API's answers to a task list, by status and code.
 */
async function whileDown(c: Cluster, ms: number): Promise<{ unready: Set<string>; answers: Record<string, number> }> {
  const unready = new Set<string>();
  const answers: Record<string, number> = {};
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const probes = [c.api!, ...c.schedulers, ...c.workers].map(async (app) => {
      const res = await fetch(`${app.url}/health/ready`, { signal: AbortSignal.timeout(3_000) }).catch(() => null);
      if (res?.status === 503) unready.add(app.label);
    });
    const listed = fetch(`${c.api!.url}/v1/tasks?limit=1`, {
      headers: { authorization: `Bearer ${c.adminKey}` },
      signal: AbortSignal.timeout(3_000),
    }).then(
      async (res) => {
        const code =
          res.status === 200
            ? ''
            : ` ${((await res.json().catch(() => null)) as { error?: { code?: string } } | null)?.error?.code} (Retry-After ${res.headers.get('retry-after')})`;
        answers[`${res.status}${code}`] = (answers[`${res.status}${code}`] ?? 0) + 1;
      },
      // No answer within 3 s: counted as such (the assertions below refuse it).
      () => void (answers['no answer'] = (answers['no answer'] ?? 0) + 1),
    );
    await Promise.all([...probes, listed, sleep(500)]);
  }
  return { unready, answers };
}

/**
 * How long after `since` the slots of `taskIds` started on time again: from the first slot on which
 * every later one started within 1 s of its fire_at.
 */
async function onTimeAgainAfter(c: Cluster, since: number, taskIds: string[]): Promise<number> {
  const { rows } = await c.db.query<{ slot: Date; late: boolean }>(
    `SELECT scheduled_for AS slot, bool_or(started_at - fire_at > interval '1 s') AS late
     FROM task_execution WHERE task_id = ANY($2::uuid[]) AND scheduled_for >= $1 AND started_at IS NOT NULL GROUP BY scheduled_for ORDER BY scheduled_for`,
    [new Date(since), taskIds],
  );
  const lastLate = rows.filter((r) => r.late).at(-1);
  const firstOnTime = lastLate ? rows.find((r) => r.slot > lastLate.slot) : rows[0];
  return firstOnTime ? firstOnTime.slot.getTime() - since : Number.NaN;
}

describe.skipIf(ownPostgresUnavailable() !== null)('fault: the database blinks right after handlers return', () => {
  afterEach(async () => {
    await cluster?.stop();
    await proxy?.close();
    server?.dispose();
    cluster = server = proxy = undefined;
  });
  it(
    `the network to Postgres stops forwarding for ${BLINK_MS / 1000} s, then Postgres is restarted and ` +
      `kept down ${BLINK_MS / 1000} s, while ${TASKS} tasks' 2 s webhooks run on two workers and two ` +
      `schedulers lead: every success is written once it is back, none runs twice, none is lost; meanwhile ` +
      `every role is unready and the API answers 503`,
    async () => {
      server = await OwnPostgres.start();
      const sandbox = await openSandbox(undefined, 'blink', server.base);
      // Room for every handler in flight: 2 s handlers of every-second tasks, on two workers.
      cluster = await Cluster.start({
        schedulers: 2,
        workers: 0,
        api: true,
        sandbox,
        env: { WORKER_CONCURRENCY: String(TASKS * 1.5) },
      });
      const c = cluster;
      // One worker reaches Postgres through a proxy (the network, made faulty on demand); the other and the schedulers directly.
      proxy = await TcpProxy.start({ host: '127.0.0.1', port: server.port });
      await c.add('worker', { DATABASE_URL: proxy.urlFor(sandbox.databaseUrl) });
      await c.add('worker');
      const { ids, firstSlot } = await c.createEverySecondTasks(TASKS, {}, { webhook: { delay: HANDLER_MS } });
      // And tasks whose run fits their period, to time the return to schedule by: a 2 s run of an
      // every-second task has a backlog of late slots after an outage, run one after another (a slot
      // is never skipped for the system's own lateness), and is late as long as that backlog lasts.
      const quick = await c.createEverySecondTasks(QUICK_TASKS, {}, { prefix: 'quick', webhook: { delay: 100 } });

      await whileHandlersRun(c);
      // Every handler in flight now returns while its worker cannot reach Postgres: its success waits.
      proxy.partition();
      let inFlight = c.invocations.calls.filter((call) => call.endedAt === null).length;
      await sleep(BLINK_MS);
      proxy.heal();
      console.log(`network to Postgres cut ${BLINK_MS} ms with ${inFlight} handlers in flight`);

      await whileHandlersRun(c);
      // Postgres itself goes away — an operator's restart, a failover — and comes back.
      server.stop();
      inFlight = c.invocations.calls.filter((call) => call.endedAt === null).length;
      const seen = await whileDown(c, BLINK_MS);
      server.start();
      const returnedAt = Date.now();
      await c.reconnect();
      console.log(
        `Postgres down ${BLINK_MS} ms with ${inFlight} handlers in flight; the API answered ${JSON.stringify(seen.answers)}`,
      );
      // Meanwhile every role said it was not ready (a load balancer or Kubernetes stops sending it
      // work), and the API answered 503 unavailable with a Retry-After — never a 500.
      expect([...seen.unready].sort()).toEqual([c.api!, ...c.schedulers, ...c.workers].map((app) => app.label).sort());
      expect(Object.keys(seen.answers)).toContain('503 unavailable (Retry-After 5)');
      expect(Object.keys(seen.answers).filter((answer) => !/^(200|503 unavailable)/.test(answer))).toEqual([]);

      // Every role reconnects by itself and is ready again.
      await Promise.all([c.api!, ...c.schedulers, ...c.workers].map((app) => app.ready(30_000)));
      await expectEverySlotOnce(
        c,
        [...ids, ...quick.ids],
        Math.max(firstSlot, quick.firstSlot),
        'after the partition and the restart',
      );
      console.log(
        `on time again (every later slot started within 1 s of its fire_at) after Postgres returned: tasks of 100 ms runs ${await onTimeAgainAfter(c, returnedAt, quick.ids)} ms (target: 15 s), ` +
          `tasks of 2 s runs ${await onTimeAgainAfter(c, returnedAt, ids)} ms (their backlog of late slots, one after another)`,
      );
    },
    300_000,
  );
});
