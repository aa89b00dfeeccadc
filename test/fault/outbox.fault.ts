import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';

interface Delivery {
  headers: IncomingMessage['headers'];
  body: string;
}

describe('fault: outbox notifications survive a notifier killed mid-delivery', () => {
  let cluster: Cluster;
  let server: Server;
  let url: string;
  const deliveries: Delivery[] = [];
  let respond: (res: ServerResponse, n: number) => void = (res) => res.end('ok');

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        deliveries.push({ headers: req.headers, body });
        respond(res, deliveries.length);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true, env: { HTTP_ALLOW_HOSTS: '127.0.0.1' } });
  });
  afterAll(async () => {
    await cluster?.stop();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('delivers signed, retries a failure, and redelivers after kill -9 with the same Idempotency-Key', async () => {
    // 1st delivery: the worker is killed while waiting for the answer. 2nd: 500. 3rd: 200.
    const killed: Promise<void> = new Promise((resolveKilled) => {
      respond = (res, n) => {
        if (n === 1) {
          cluster.workers[0]!.signal('SIGKILL');
          resolveKilled();
          return;
        }
        res.statusCode = n === 2 ? 500 : 200;
        res.end();
      };
    });
    const created = await cluster.call('POST', '/v1/tasks', {
      name: 'notifying',
      handler: 'noop',
      schedule: { at: new Date(Date.now() + 1500).toISOString() },
      notify: { url, on: ['succeeded'] },
    });
    expect(created.status).toBe(201);
    await killed;
    await cluster.add('worker');
    await cluster.waitFor(async () => deliveries.length >= 3, 30_000, 'three deliveries');
    const c = cluster;
    const row = await c.waitFor(
      async () => (await c.db.query(`SELECT id, attempts, delivered_at FROM outbox`)).rows.find((r) => r.delivered_at),
      10_000,
      'delivered',
    );

    expect(new Set(deliveries.map((d) => d.headers['idempotency-key']))).toEqual(new Set([row.id]));
    expect(row.attempts).toBeGreaterThanOrEqual(2);
    const last = deliveries.at(-1)!;
    expect(last.headers['x-punctual-signature']).toBe(
      `sha256=${createHmac('sha256', created.body.secret).update(last.body).digest('hex')}`,
    );
    const body = JSON.parse(last.body);
    expect(body).toMatchObject({
      id: row.id,
      event: 'succeeded',
      task: 'notifying',
      namespace: 'default',
      execution: { status: 'succeeded', task: 'notifying', namespace: 'default' },
    });
    const { rows } = await c.db.query(`SELECT count(*)::int AS n FROM outbox`);
    expect(rows[0].n).toBe(1);
  });
});
