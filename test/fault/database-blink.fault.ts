import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { OwnPostgres, ownPostgresUnavailable } from '../support/postgres-server.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';
import { openSandbox } from '../support/sandbox.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** Tasks every second whose webhook answers after 2 s: at any instant most of them are in a handler. */
const TASKS = 100;
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
  console.log(`${what}: ${report.expected} slots: ${JSON.stringify(report.byStatus)}, ${report.invoked} handler runs, max attempt ${report.maxAttempt}`);
  expectEveryPromiseKept(report);
}

/** Waits until `TASKS / 2` or more handlers are in flight, newly started since the last wait. */
async function whileHandlersRun(c: Cluster): Promise<void> {
  const since = Date.now();
  await c.waitFor(async () => {
    const open = c.invocations.calls.filter((call) => call.endedAt === null && call.at >= since - HANDLER_MS).length;
    return c.invocations.calls.some((call) => call.at >= since) && open >= TASKS / 2;
  }, 40_000, 'handlers in flight');
}

describe.skipIf(ownPostgresUnavailable() !== null)('fault: the database blinks right after handlers return', () => {
  afterEach(async () => {
    await cluster?.stop();
    await proxy?.close();
    server?.dispose();
    cluster = server = proxy = undefined;
  });
  it(`the network to Postgres stops forwarding for ${BLINK_MS / 1000} s, then Postgres is restarted and kept down ${BLINK_MS / 1000} s, while ${TASKS} tasks' 2 s webhooks run: every success is written once it is back, none runs twice, none is lost`, async () => {
    server = await OwnPostgres.start();
    const sandbox = await openSandbox(undefined, 'blink', server.base);
    cluster = await Cluster.start({ schedulers: 1, workers: 0, sandbox, env: { WORKER_CONCURRENCY: String(TASKS) } });
    const c = cluster;
    // The worker reaches Postgres through a proxy (the network, made faulty on demand); the scheduler directly.
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: server.port });
    await c.add('worker', { DATABASE_URL: proxy.urlFor(sandbox.databaseUrl) });
    const { ids, firstSlot } = await c.createEverySecondTasks(TASKS, {}, { webhook: { delay: HANDLER_MS } });

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
    await sleep(BLINK_MS);
    server.start();
    await c.reconnect();
    console.log(`Postgres down ${BLINK_MS} ms with ${inFlight} handlers in flight`);

    await expectEverySlotOnce(c, ids, firstSlot, 'after the partition and the restart');
    // The processes came through both.
    await Promise.all([...c.schedulers, ...c.workers].map((app) => app.ready(10_000)));
  }, 300_000);
});
