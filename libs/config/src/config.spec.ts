import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';
import { hashTagOf } from './config.schema.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/punctual',
      redisUrl: 'redis://127.0.0.1:6379',
      redisPrefix: 'punctual',
      port: 3000,
      leaderTtlMs: 5000,
      schedulerShards: 1,
      lookaheadMs: 2000,
      planTickMs: 250,
      leaseMs: 30_000,
      workerConcurrency: 50,
      shutdownGraceMs: 25_000,
      catchupMax: 100,
      historyRetentionMs: 30 * 86_400_000,
      deadLetterRetentionMs: 90 * 86_400_000,
      auditRetentionMs: 365 * 86_400_000,
      historyPassMs: 60_000,
      nodeEnv: 'production',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads retentions as durations of at least an hour', () => {
    expect(loadConfig({ HISTORY_RETENTION: '12h', DEAD_LETTER_RETENTION: '7d', AUDIT_RETENTION: '90m' })).toMatchObject(
      {
        historyRetentionMs: 12 * 3_600_000,
        deadLetterRetentionMs: 7 * 86_400_000,
        auditRetentionMs: 90 * 60_000,
      },
    );
    expect(() => loadConfig({ HISTORY_RETENTION: '30m' })).toThrow(
      'Invalid configuration: HISTORY_RETENTION must be at least 1h: no row a slot can still need is ever pruned (got "30m")',
    );
    expect(() => loadConfig({ DEAD_LETTER_RETENTION: 'a month' })).toThrow(
      'Invalid configuration: DEAD_LETTER_RETENTION must be a duration such as "30d", "12h" or "90m" (got "a month")',
    );
  });

  it('listens on every interface in production and on the loopback address in development, unless HOST says', () => {
    expect(loadConfig({}).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'development' }).host).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(() => loadConfig({ HOST: 'not a host' })).toThrow(
      'Invalid configuration: HOST must be an IP address or a host name, e.g. 0.0.0.0 or 127.0.0.1 (got "not a host")',
    );
  });

  it('parses values and lists', () => {
    const config = loadConfig({ PORT: '8080', HTTP_ALLOW_HOSTS: 'a.example, B.example ,', LEADER_TTL_MS: '' });
    expect(config.port).toBe(8080);
    expect(config.httpAllowHosts).toEqual(['a.example', 'b.example']);
    expect(config.leaderTtlMs).toBe(5000);
  });

  it('leaves tracing off unless an OTLP endpoint is given', () => {
    expect(loadConfig({}).otlpEndpoint).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }).otlpEndpoint).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).otlpEndpoint).toBe(
      'http://collector:4318',
    );
  });

  it('registers the test handlers only when ENABLE_TEST_HANDLERS is true', () => {
    expect(loadConfig({}).enableTestHandlers).toBe(false);
    expect(loadConfig({ ENABLE_TEST_HANDLERS: '' }).enableTestHandlers).toBe(false);
    expect(loadConfig({ ENABLE_TEST_HANDLERS: 'false' }).enableTestHandlers).toBe(false);
    expect(loadConfig({ ENABLE_TEST_HANDLERS: 'true' }).enableTestHandlers).toBe(true);
  });

  it('reaches Redis as one server, through Sentinel, or as a Redis Cluster (with a hash-tagged prefix by default)', () => {
    expect(loadConfig({}).redisTopology).toEqual({ kind: 'single' });
    const sentinel = loadConfig({
      REDIS_SENTINELS: ' s0:26379, s1.example:26380 ',
      REDIS_SENTINEL_MASTER: 'mymaster',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
    });
    expect(sentinel.redisTopology).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's0', port: 26379 },
        { host: 's1.example', port: 26380 },
      ],
      master: 'mymaster',
      sentinelPassword: 'sentinel-secret',
    });
    expect(sentinel.redisPrefix).toBe('punctual');
    const cluster = loadConfig({ REDIS_CLUSTER_NODES: 'r0:7000,r1:7001' });
    expect(cluster.redisTopology).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'r0', port: 7000 },
        { host: 'r1', port: 7001 },
      ],
    });
    expect(cluster.redisPrefix).toBe('{punctual}');
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'r0:7000', REDIS_PREFIX: 'team-{a}' }).redisPrefix).toBe('team-{a}');
    expect(Object.isFrozen(sentinel.redisTopology)).toBe(true);
  });

  it.each([
    [
      { ENABLE_TEST_HANDLERS: 'yes' },
      /^Invalid configuration: ENABLE_TEST_HANDLERS must be true or false \(got "yes"\)$/,
    ],
    [{ PORT: 'abc' }, /^Invalid configuration: PORT must be a whole number \(got "abc"\)$/],
    [{ LEADER_TTL_MS: '10' }, /^Invalid configuration: LEADER_TTL_MS must be at least 500/],
    [{ SCHEDULER_SHARDS: '257' }, /^Invalid configuration: SCHEDULER_SHARDS must be at most 256 \(got "257"\)$/],
    [{ REDIS_URL: 'http://x' }, /^Invalid configuration: REDIS_URL must be a URL starting with redis:\/\//],
    [{ LOG_LEVEL: 'loud' }, /^Invalid configuration: LOG_LEVEL /],
    [{ ADMIN_API_KEY: 'short' }, /^Invalid configuration: ADMIN_API_KEY must be at least 16 characters$/],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /^Invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be a URL starting with http:\/\/ or https:\/\/ \(got "collector:4318"\)$/,
    ],
    [
      { REDIS_SENTINELS: 'sentinel-0' },
      /^Invalid configuration: REDIS_SENTINELS must list host:port addresses, comma-separated .* \(got "sentinel-0"\)$/,
    ],
    [{ REDIS_SENTINELS: 'a:26379,b:99999' }, /^Invalid configuration: REDIS_SENTINELS must list host:port addresses/],
    [{ REDIS_SENTINELS: 'a:26379' }, /^Invalid configuration: REDIS_SENTINEL_MASTER must be set with REDIS_SENTINELS/],
    [
      { REDIS_SENTINEL_MASTER: 'mymaster' },
      /^Invalid configuration: REDIS_SENTINEL_MASTER is read only with REDIS_SENTINELS, which is not set/,
    ],
    [
      { REDIS_SENTINEL_PASSWORD: 'secret-word' },
      /^Invalid configuration: REDIS_SENTINEL_PASSWORD is read only with REDIS_SENTINELS, which is not set$/,
    ],
    [
      { REDIS_SENTINELS: 'a:26379', REDIS_SENTINEL_MASTER: 'mymaster', REDIS_CLUSTER_NODES: 'b:6379' },
      /^Invalid configuration: REDIS_CLUSTER_NODES must not be set with REDIS_SENTINELS/,
    ],
    [
      { REDIS_CLUSTER_NODES: 'b:6379', REDIS_PREFIX: 'punctual' },
      /^Invalid configuration: REDIS_PREFIX must hold a hash tag such as \{punctual\} with REDIS_CLUSTER_NODES/,
    ],
    // Redis hashes by the first tag: an empty one first hashes the whole key, whatever follows.
    [
      { REDIS_CLUSTER_NODES: 'b:6379', REDIS_PREFIX: '{}{punctual}' },
      /^Invalid configuration: REDIS_PREFIX must hold a hash tag such as \{punctual\} with REDIS_CLUSTER_NODES/,
    ],
  ])('rejects %o with one line naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
    try {
      loadConfig(env);
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });
});

describe('the hash tag of REDIS_PREFIX', () => {
  it('is found as Redis Cluster finds it: the first { and the first } after it, when not empty', () => {
    expect(hashTagOf('{punctual}')).toBe('punctual');
    expect(hashTagOf('app:{punctual}:')).toBe('punctual');
    expect(hashTagOf('}{x}')).toBe('x');
    expect(hashTagOf('{a}{b}')).toBe('a');
    for (const none of ['punctual', '{}{x}', '{}', '{x', 'x}'] as const) expect(hashTagOf(none), none).toBeNull();
  });
});
