import { afterEach, describe, expect, it } from 'vitest';
import { startLocalServer } from '../handlers/local-server.js';
import { Cluster } from '../support/cluster.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** One call of the webhook: when it arrived, and when its connection closed (answered, or aborted by the caller). */
interface Call {
  executionId: string;
  arrivedAt: number;
  closedAt: number | null;
  answered: boolean;
}

/** A webhook whose first call of each execution hangs until its caller gives up; later calls answer at once. */
async function hangingWebhook() {
  const calls: Call[] = [];
  const server = await startLocalServer({
    '/hit': (res, req) => {
      const call: Call = {
        executionId: String(req.headers['x-punctual-execution']),
        arrivedAt: Date.now(),
        closedAt: null,
        answered: false,
      };
      calls.push(call);
      res.on('close', () => (call.closedAt = Date.now()));
      if (calls.filter((c) => c.executionId === call.executionId).length > 1) {
        call.answered = true;
        res.end('ok');
      }
    },
  });
  return { calls, url: server.url('/hit'), close: server.close };
}

let cluster: Cluster | undefined;
let proxy: TcpProxy | undefined;

describe('fault: a worker cut off from Postgres', () => {
  afterEach(async () => {
    await cluster?.stop();
    await proxy?.close();
    cluster = proxy = undefined;
  });
  it('a worker that cannot renew its lease aborts its handler before the lease ends: the next attempt never runs beside it', async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 0, api: true, env: { LEASE_MS: '3000' } });
    const c = cluster;
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(new URL(c.sandbox.databaseUrl).port || 5432) });
    await c.add('worker', { DATABASE_URL: proxy.urlFor(c.sandbox.databaseUrl) });
    const webhook = await hangingWebhook();
    try {
      await c.call('POST', '/v1/tasks', {
        name: 'cut-off',
        handler: 'http',
        payload: { url: webhook.url, timeoutMs: 60_000 },
        schedule: { at: new Date(Date.now() + 1_500).toISOString() },
      });
      const first = await c.waitFor(async () => webhook.calls[0], 15_000, 'the first call');
      // Another worker, with its own way to Postgres, is there to take the slot over.
      await c.add('worker');
      const partitionedAt = Date.now();
      proxy.partition();
      const second = await c.waitFor(async () => webhook.calls[1], 20_000, "the second attempt's call");
      console.log(
        `partition → first call aborted after ${first.closedAt! - partitionedAt} ms, second attempt's call after ${second.arrivedAt - partitionedAt} ms (LEASE_MS=3000)`,
      );
      // The first attempt's request was aborted — by its handler's signal — before the second attempt called.
      expect(first.answered).toBe(false);
      expect(first.closedAt).not.toBeNull();
      expect(first.closedAt!).toBeLessThan(second.arrivedAt);
      proxy.heal();
      const done = await c.waitFor(
        async () => (await c.executionsOf('cut-off')).find((e) => e.status === 'succeeded'),
        15_000,
        'success',
      );
      expect(done.attempt).toBe(2);
      expect(webhook.calls.map((call) => call.executionId)).toEqual([done.id, done.id]);
    } finally {
      await webhook.close();
    }
  });

  it('a claim whose answer is lost with its connection: the worker finds it committed and runs the handler, spending no extra attempt', async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 0, api: true });
    const c = cluster;
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(new URL(c.sandbox.databaseUrl).port || 5432) });
    await c.add('worker', { DATABASE_URL: proxy.urlFor(c.sandbox.databaseUrl) });
    // The claim's statement reaches Postgres and commits; its connection dies before the answer comes back.
    const dropped = proxy.dropAnswerTo('The row as the candidate saw it');
    await c.call('POST', '/v1/tasks', {
      name: 'answer-lost',
      handler: 'http',
      payload: { url: c.invocations.url() },
      schedule: { at: new Date(Date.now() + 1_500).toISOString() },
      policy: { retry: { attempts: 1 } },
    });
    await dropped;
    const done = await c.waitFor(
      async () =>
        (await c.executionsOf('answer-lost')).find(
          (e) => e.status !== 'running' && e.status !== 'queued' && e.status !== 'scheduled',
        ),
      20_000,
      'an outcome',
    );
    expect([done.status, done.attempt]).toEqual(['succeeded', 1]);
    expect(c.invocations.callsBy().get(done.id)).toBe(1);
  });
});
