import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { mostAtOnce } from '../support/invocations.js';
import { createSandbox } from '../support/isolation.js';
import { OwnPgBouncer, pgbouncerUnavailable } from '../support/pgbouncer.js';
import { expectEveryPromiseKept } from '../support/promises.js';
import { sleep } from '../support/processes.js';

const TASKS = 20;
/** One-offs sharing a concurrency key of 2, each call 1 s. */
const KEYED = 8;

let cluster: Cluster | undefined;
let bouncer: OwnPgBouncer | undefined;

const unavailable = pgbouncerUnavailable();
if (unavailable)
  console.warn(
    `SKIPPED: the PgBouncer fault suite (fault: every role through PgBouncer in transaction mode): ${unavailable}`,
  );

/**
 * The fault suite's core — a leader killed, an edit mid-run, a flow-control key — with the API and
 * the workers on PgBouncer in `pool_mode=transaction` (DATABASE_POOLING=transaction: no session
 * settings, no named statements) and the schedulers on Postgres directly (DATABASE_DIRECT_URL: their
 * fencing needs a session's limits). Counted at the webhook, under the default policies.
 */
describe.skipIf(unavailable !== null)('fault: every role through PgBouncer in transaction mode', () => {
  afterEach(async () => {
    await cluster?.stop();
    await bouncer?.stop();
    cluster = bouncer = undefined;
  });

  it(`a leader kill -9, an edit mid-run and a concurrency key, with ${TASKS} every-second tasks: every slot runs once, the edit applies from the next slot, the key's limit holds`, async () => {
    bouncer = await OwnPgBouncer.start({ host: '127.0.0.1', port: 5432 });
    const sandbox = await createSandbox();
    const env = {
      DATABASE_URL: bouncer.urlFor(sandbox.databaseUrl),
      DATABASE_POOLING: 'transaction',
      DATABASE_DIRECT_URL: sandbox.databaseUrl,
    };
    cluster = await Cluster.start({ schedulers: 2, workers: 2, api: true, sandbox, env });
    const c = cluster;
    const { ids, firstSlot } = await c.createEverySecondTasks(TASKS, {}, { webhook: { delay: 200, v: 1 } });
    await c.waitFor(async () => c.invocations.calls.length >= TASKS * 2, 20_000, 'the tasks running');

    // Every role but the schedulers is a client of PgBouncer.
    const clients = (await bouncer.show('CLIENTS')).map((row) => String(row.application_name));
    expect(clients.some((name) => name.startsWith('punctual worker'))).toBe(true);
    expect(clients.some((name) => name.startsWith('punctual api'))).toBe(true);
    expect(clients.filter((name) => name.startsWith('punctual scheduler'))).toEqual([]);

    // An edit of what one task calls, through the API (through PgBouncer), mid-run.
    const edited = await c.call('PATCH', `/v1/tasks/fault-1`, {
      payload: { url: c.invocations.url({ delay: 200, v: 2 }) },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    const editedAt = Date.now();
    // A concurrency key shared by one-offs due at once.
    const at = new Date(Date.now() + 3_000);
    const keyed = Array.from({ length: KEYED }, (_, i) => ({
      name: `keyed-${i}`,
      handler: 'http',
      payload: { url: c.invocations.url({ delay: 1_000, v: 3 }) },
      schedule: { at: at.toISOString() },
      policy: { concurrency: { key: 'partner', limit: 2 } },
    }));
    expect((await c.call('POST', '/v1/tasks:batch', { tasks: keyed })).status).toBe(200);

    // The leader dies; the other scheduler takes over.
    await sleep(1_500);
    const leader = await c.waitForLeader();
    leader.signal('SIGKILL');

    const keyedRuns = await c.waitFor(
      async () => {
        const { rows } = await c.db.query(`SELECT id, status FROM task_execution WHERE task_name LIKE 'keyed-%'`);
        return rows.length === KEYED && rows.every((r) => r.status === 'succeeded') ? rows : null;
      },
      60_000,
      `${KEYED} keyed runs succeeded`,
    );
    await sleep(3_000);
    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await c.settle(lastSlot, 60_000);
    const report = await c.report(ids, firstSlot, lastSlot);
    expectEveryPromiseKept(report);

    const succeeded = c.invocations.succeededBy();
    for (const run of keyedRuns) expect(succeeded.get(run.id)).toBe(1);
    const keyedCalls = c.invocations.calls.filter((call) => call.url.endsWith('v=3'));
    expect(keyedCalls).toHaveLength(KEYED);
    expect(mostAtOnce(keyedCalls)).toBe(2);
    // The edited task called the new URL from a slot after the edit on, and the old one never after.
    const [editedId] = ids;
    const { rows: editedRows } = await c.db.query(`SELECT id, scheduled_for FROM task_execution WHERE task_id = $1`, [
      editedId,
    ]);
    const slotOf = new Map(editedRows.map((r) => [r.id as string, (r.scheduled_for as Date).getTime()]));
    const versions = c.invocations.calls
      .filter((call) => call.status < 300 && slotOf.has(call.executionId))
      .map((call) => ({ slot: slotOf.get(call.executionId)!, v: call.url.endsWith('v=2') ? 2 : 1 }));
    expect(versions.some((x) => x.v === 2)).toBe(true);
    const firstNew = Math.min(...versions.filter((x) => x.v === 2).map((x) => x.slot));
    expect(versions.filter((x) => x.v === 1 && x.slot >= firstNew)).toEqual([]);
    expect(firstNew).toBeLessThanOrEqual(editedAt + 5_000);

    // PgBouncer carried the API's and the workers' transactions.
    const stats = (await bouncer.show('STATS')).find(
      (row) => row.database === new URL(sandbox.databaseUrl).pathname.slice(1),
    );
    expect(Number(stats?.total_xact_count)).toBeGreaterThan(100);
    console.log(
      `pgbouncer (transaction mode): ${report.expected} slots ${JSON.stringify(report.byStatus)}, ${Number(stats?.total_xact_count)} transactions through it; ` +
        `keyed: ${KEYED} runs, at most ${mostAtOnce(keyedCalls)} at once; the edit applied from the slot ${firstNew - editedAt} ms after it`,
    );
  });
});
