import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { REDIS_URL } from '../support/env.js';

const SECRET = 'SUPER-SECRET-7f3a9c';

describe('secrets never leak', () => {
  let cluster: Cluster;
  let taskSecret: string;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true, env: { LOG_LEVEL: 'debug' } });
    const created = await cluster.call('POST', '/v1/tasks', {
      name: 'secretive',
      handler: 'log',
      payload: { token: SECRET, nested: { password: SECRET }, visible: 'ok' },
      secretFields: ['token', 'nested.password'],
      schedule: { cron: '* * * * * *' },
    });
    expect(created.status).toBe(201);
    taskSecret = created.body.secret;
    expect(created.body.payload).toEqual({ token: '[redacted]', nested: { password: '[redacted]' }, visible: 'ok' });
    await cluster.waitFor(
      async () => (await cluster.executionsOf('secretive')).filter((e) => e.status === 'succeeded').length >= 2,
      15_000,
      'two runs',
    );
    // A refused request that carries the secret must not echo it back.
    const refused = await cluster.call('POST', '/v1/tasks', {
      name: 'bad one',
      handler: 'log',
      payload: { token: SECRET },
      schedule: { cron: 'nope' },
    });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).not.toContain(SECRET);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('the log handler ran and logged the payload, with secret fields masked', () => {
    const worker = cluster.workers[0]!.output;
    expect(worker).toContain('"visible":"ok"');
    expect(worker).toContain('[redacted]');
  });

  it('is in no log line of any process: payload secrets, the signing secret, the admin key', () => {
    for (const app of [...cluster.schedulers, ...cluster.workers, cluster.api!]) {
      expect(app.output, app.label).not.toContain(SECRET);
      expect(app.output, app.label).not.toContain(taskSecret);
      expect(app.output, app.label).not.toContain('test-admin-key-0123456789');
    }
  });

  it('is not in the task as the API shows it, nor in Bull Board API responses', async () => {
    expect(JSON.stringify((await cluster.call('GET', '/v1/tasks/secretive')).body)).not.toContain(SECRET);
    for (const path of [
      '/admin/queues/api/queues',
      '/admin/queues/api/queues?activeQueue=executions&status=completed&page=1&jobsPerPage=50',
    ]) {
      const res = await cluster.call('GET', path);
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain(SECRET);
    }
  });

  it('is not in Redis: job data carries only the execution id', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${cluster.sandbox.redisPrefix}:*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) {
        const type = await redis.type(key);
        const dump =
          type === 'hash'
            ? JSON.stringify(await redis.hgetall(key))
            : type === 'string'
              ? await redis.get(key)
              : type === 'list'
                ? JSON.stringify(await redis.lrange(key, 0, -1))
                : type === 'zset'
                  ? JSON.stringify(await redis.zrange(key, 0, -1))
                  : type === 'stream'
                    ? JSON.stringify(await redis.xrange(key, '-', '+'))
                    : '';
        expect(dump ?? '', key).not.toContain(SECRET);
      }
    } finally {
      redis.disconnect();
    }
  });
});
