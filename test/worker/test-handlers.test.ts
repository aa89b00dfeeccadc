import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';

/**
 * `sleep` and `fail` exist for tests and benchmarks: a worker registers them only with
 * ENABLE_TEST_HANDLERS=true, so a production worker offers nothing that waits or fails on purpose.
 */
describe('the test handlers sleep and fail', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 0, workers: 0, api: true, env: { ENABLE_TEST_HANDLERS: '' } });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const handlersOf = async (instance: string) => {
    const workers = (await cluster.call('GET', '/v1/cluster')).body.workers as {
      instance: string;
      handlers: string[];
    }[];
    return workers.find((w) => w.instance === instance)?.handlers;
  };

  it('are offered by a worker only when ENABLE_TEST_HANDLERS is true', async () => {
    const plain = await cluster.add('worker');
    expect(await cluster.waitFor(() => handlersOf(plain.instanceId), 15_000, 'the worker without the setting')).toEqual(
      ['http', 'log', 'noop'],
    );
    expect((await cluster.call('GET', '/v1/handlers')).body.items.map((h: { name: string }) => h.name)).toEqual([
      'http',
      'log',
      'noop',
    ]);
    const refused = await cluster.call('POST', '/v1/tasks', {
      name: 'slow',
      handler: 'sleep',
      payload: { ms: 10 },
      schedule: { cron: '0 0 1 1 *' },
    });
    expect(refused.body.warnings).toEqual(['no live worker offers handler "sleep"']);

    const testing = await cluster.add('worker', { ENABLE_TEST_HANDLERS: 'true' });
    expect(await cluster.waitFor(() => handlersOf(testing.instanceId), 15_000, 'the worker with the setting')).toEqual([
      'fail',
      'http',
      'log',
      'noop',
      'sleep',
    ]);
    expect((await cluster.call('GET', '/v1/handlers')).body.items).toEqual([
      { name: 'fail', workers: 1 },
      { name: 'http', workers: 2 },
      { name: 'log', workers: 2 },
      { name: 'noop', workers: 2 },
      { name: 'sleep', workers: 1 },
    ]);
  });
});
