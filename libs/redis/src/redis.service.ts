import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { Cluster, Redis, type RedisOptions } from 'ioredis';

/**
 * A connection to Punctual's Redis: one server, its primary found through Sentinel (both a
 * `Redis`), or a Redis Cluster. Every key Punctual writes carries the prefix, which in a cluster
 * holds a hash tag: every key is in one slot, so every script and pipeline is cluster-safe.
 */
export type RedisConnection = Redis | Cluster;

/** What REDIS_URL gives beside its host, for the data nodes behind Sentinel or in a cluster: credentials, database, TLS. */
function nodeOptions(redisUrl: string): RedisOptions {
  const url = new URL(redisUrl);
  const options: RedisOptions = {};
  if (url.username) options.username = decodeURIComponent(url.username);
  if (url.password) options.password = decodeURIComponent(url.password);
  if (url.pathname.length > 1) options.db = Number(url.pathname.slice(1));
  if (url.protocol === 'rediss:') options.tls = {};
  return options;
}

/** A new connection as `config` says to reach Redis (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES). */
export function connectRedis(
  config: Pick<Config, 'redisUrl' | 'redisTopology'>,
  options: RedisOptions = {},
): RedisConnection {
  const topology = config.redisTopology;
  switch (topology.kind) {
    case 'single':
      return new Redis(config.redisUrl, options);
    case 'sentinel':
      return new Redis({
        ...nodeOptions(config.redisUrl),
        ...options,
        sentinels: topology.sentinels.map((s) => ({ host: s.host, port: s.port })),
        name: topology.master,
        sentinelPassword: topology.sentinelPassword,
        // Reconnect to the new primary as soon as a sentinel announces the switch, not at the next error.
        failoverDetector: true,
      });
    case 'cluster': {
      const { db: _db, ...node } = nodeOptions(config.redisUrl);
      return new Cluster(
        topology.nodes.map((n) => ({ host: n.host, port: n.port })),
        {
          lazyConnect: options.lazyConnect,
          redisOptions: { ...node, ...options },
          slotsRefreshTimeout: 2_000,
          enableReadyCheck: true,
        },
      );
    }
  }
}

/**
 * Redis connections of a process, all under the configured key prefix. `client` is for commands;
 * BullMQ and subscribers get their own connections from {@link RedisService.connect}.
 */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RedisService.name);
  private readonly connections = new Set<RedisConnection>();
  readonly client: RedisConnection;

  constructor(@Inject(CONFIG) private readonly config: Config) {
    this.client = this.connect();
  }

  /** The key prefix shared by every key Punctual writes (BullMQ's prefix too). */
  get prefix(): string {
    return this.config.redisPrefix;
  }

  /** A namespaced key: `key('scheduler', 'leader')` → `<prefix>:scheduler:leader`. */
  key(...parts: string[]): string {
    return [this.config.redisPrefix, ...parts].join(':');
  }

  /**
   * Every key under `key(...parts, '*')` with its value, as `[rest of the key, value]` (SCAN, so
   * it never blocks Redis; a key that expired meanwhile is left out).
   */
  async entries(...parts: string[]): Promise<[string, string][]> {
    const prefix = this.key(...parts, '');
    const found: [string, string][] = [];
    // A cluster's keys are on its primaries: each is scanned (all of Punctual's keys are on one).
    const nodes = this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        const values = keys.length ? await node.mget(...keys) : [];
        for (const [i, value] of values.entries())
          if (value !== null) found.push([keys[i]!.slice(prefix.length), value]);
      } while (cursor !== '0');
    }
    return found;
  }

  /** A new connection; BullMQ requires `maxRetriesPerRequest: null` on blocking connections. */
  connect(options: RedisOptions = {}): RedisConnection {
    const connection = connectRedis(this.config, { maxRetriesPerRequest: null, lazyConnect: false, ...options });
    connection.on('error', (error) => this.logger.warn(`redis: ${error.message}`));
    this.connections.add(connection);
    connection.once('end', () => this.connections.delete(connection));
    return connection;
  }

  async onModuleInit(): Promise<void> {
    await this.client.ping();
    const value = await this.maxmemoryPolicy();
    if (value && value !== 'noeviction') {
      this.logger.warn(`redis maxmemory-policy is "${value}"; use "noeviction" so queued jobs are never evicted`);
    }
  }

  /** Redis' `maxmemory-policy`, or null where `CONFIG GET` is refused (some managed services). */
  async maxmemoryPolicy(): Promise<string | null> {
    // A refusal is an answer here, not a failure: the caller reports the policy as unknown.
    const reply = await this.client.config('GET', 'maxmemory-policy').catch(() => null);
    return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : null;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.connections].map((c) => c.quit().catch(() => c.disconnect())));
  }
}
