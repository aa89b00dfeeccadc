import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

/**
 * A claim whose answer comes too late: the worker's Postgres sessions are frozen (SIGSTOP of their
 * backends) as the slot's claim leaves, and thawed after the worker has given up on it. The claim
 * then commits, an attempt nobody runs — unless the worker gives it back unspent. Counted at the
 * webhook, under one attempt allowed: the handler runs once, and the run does not end dead unrun.
 */
describe('fault: a claim answered after the worker gave up on it', () => {
  let cluster: Cluster;
  const frozen: number[] = [];
  beforeAll(async () => {
    // Two connections in the worker's pool: both frozen, nothing else answers its claims.
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true, env: { DB_POOL_SIZE: '2' } });
  });
  afterAll(async () => {
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
    await cluster?.stop();
  });

  it('commits late, is given back, and runs once: one webhook call, attempt 1, succeeded', async () => {
    const c = cluster;
    const worker = c.workers[0]!;
    const fireAt = Date.now() + 4_000;
    const created = await c.call('POST', '/v1/tasks', {
      name: 'slow-claim',
      handler: 'http',
      payload: { url: c.invocations.url() },
      schedule: { at: new Date(fireAt).toISOString() },
      policy: { retry: { attempts: 1 } },
    });
    expect(created.status).toBe(201);
    // Just before the slot (its job already held by the worker), the worker's pool sessions stop answering.
    await sleep(fireAt - 300 - Date.now());
    const { rows } = await c.db.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, [
      `punctual ${worker.instanceId}`.slice(0, 63),
    ]);
    expect(rows.length).toBeGreaterThan(0);
    for (const { pid } of rows) {
      process.kill(pid, 'SIGSTOP');
      frozen.push(pid);
    }
    // Longer than the claim's answer is waited for (5 s) and its confirmation (5 s more).
    await sleep(fireAt + 13_000 - Date.now());
    for (const pid of frozen.splice(0)) process.kill(pid, 'SIGCONT');
    const ended = await c.waitFor(
      async () =>
        (await c.executionsOf('slow-claim')).find((e) => ['succeeded', 'dead', 'missed', 'skipped'].includes(e.status)),
      40_000,
      'the run to end',
    );
    const calls = c.invocations.callsBy().get(ended.id) ?? 0;
    console.log(
      `slow claim: ${ended.status}, attempt ${ended.attempt}, ${calls} webhook call(s), started ${ended.started_at ? ended.started_at.getTime() - fireAt : '-'} ms after its slot`,
    );
    expect({ status: ended.status, attempt: ended.attempt, calls }).toEqual({
      status: 'succeeded',
      attempt: 1,
      calls: 1,
    });
  });
});
