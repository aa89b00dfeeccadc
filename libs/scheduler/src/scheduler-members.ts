import type { RedisConnection } from '@punctual/redis';

// Announces `member` until Redis' clock passes now + ttl, drops every member whose announcement ran
// out, and returns how many are left. Redis' own clock: the schedulers' clocks may disagree.
const ANNOUNCE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 4)
return redis.call('ZCARD', KEYS[1])`;

/**
 * The live schedulers of a cluster: each announces itself (a sorted set scored by expiry) more
 * often than `ttlMs`, so one that died or cannot reach Redis drops out of the count within `ttlMs`.
 */
export class SchedulerMembers {
  constructor(
    private readonly redis: RedisConnection,
    private readonly key: string,
    private readonly member: string,
    private readonly ttlMs: number,
  ) {}

  /** Announces this scheduler; returns how many schedulers are live, itself included. */
  async announce(): Promise<number> {
    return Number(await this.redis.eval(ANNOUNCE, 1, this.key, this.member, String(this.ttlMs)));
  }

  /** Leaves at once (a clean shutdown), so the others' share grows without waiting for the TTL. */
  async leave(): Promise<void> {
    await this.redis.zrem(this.key, this.member);
  }
}
