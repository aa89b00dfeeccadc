import { describe, expect, it } from 'vitest';
import { Metrics } from './metrics.js';

const samples = async (metrics: Metrics, name: string) =>
  (await metrics.registry.metrics())
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));

describe('Metrics', () => {
  it("reads a worker's load at each scrape", async () => {
    const metrics = new Metrics();
    expect(await samples(metrics, 'punctual_worker_running')).toEqual([]);
    let running = 3;
    metrics.trackWorkerLoad('worker-1', 50, () => running);
    expect(await samples(metrics, 'punctual_worker_running')).toEqual(['punctual_worker_running{worker="worker-1"} 3']);
    running = 0;
    expect(await samples(metrics, 'punctual_worker_running')).toEqual(['punctual_worker_running{worker="worker-1"} 0']);
    expect(await samples(metrics, 'punctual_worker_concurrency')).toEqual([
      'punctual_worker_concurrency{worker="worker-1"} 50',
    ]);
  });

  it("keeps one series for Redis' current eviction policy", async () => {
    const metrics = new Metrics();
    metrics.observeRedisPolicy('allkeys-lru');
    metrics.observeRedisPolicy('noeviction');
    expect(await samples(metrics, 'punctual_redis_maxmemory_policy')).toEqual([
      'punctual_redis_maxmemory_policy{policy="noeviction"} 1',
    ]);
    metrics.observeRedisPolicy(null);
    expect(await samples(metrics, 'punctual_redis_maxmemory_policy')).toEqual([
      'punctual_redis_maxmemory_policy{policy="unknown"} 1',
    ]);
  });

  it('exports leadership changes from zero, so the first failover counts in increase()', async () => {
    expect(await samples(new Metrics(), 'punctual_leader_changes_total')).toEqual([
      'punctual_leader_changes_total{change="elected"} 0',
      'punctual_leader_changes_total{change="deposed"} 0',
    ]);
  });
});
