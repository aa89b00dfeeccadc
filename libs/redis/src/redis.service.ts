import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { Redis, type RedisOptions } from 'ioredis';

/**
 * Redis connections of a process, all under the configured key prefix. `client` is for commands;
 * BullMQ and subscribers get their own connections from {@link RedisService.connect}.
 */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RedisService.name);
  private readonly connections = new Set<Redis>();
  readonly client: Redis;

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
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      const values = keys.length ? await this.client.mget(...keys) : [];
      for (const [i, value] of values.entries()) if (value !== null) found.push([keys[i]!.slice(prefix.length), value]);
    } while (cursor !== '0');
    return found;
  }

  /** A new connection; BullMQ requires `maxRetriesPerRequest: null` on blocking connections. */
  connect(options: RedisOptions = {}): Redis {
    const connection = new Redis(this.config.redisUrl, { maxRetriesPerRequest: null, lazyConnect: false, ...options });
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
