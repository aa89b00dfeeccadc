import { randomBytes } from 'node:crypto';
import { bestEffort } from '@punctual/metrics';
import type { RedisConnection } from '@punctual/redis';

// Compare-and-refresh / compare-and-delete: only the holder of the token may extend or release the
// lock, so a paused ex-leader can never prolong or drop its successor's lease.
const REFRESH = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/**
 * After the holder's lease ends a follower waits this long more: time for a refresh already on its
 * way to land, and a spread so several followers do not all try in the same millisecond.
 */
const FOLLOWER_SLACK_MS = 5;

export interface LeaderElectorOptions {
  key: string;
  instanceId: string;
  ttlMs: number;
  onElected: () => void;
  onDeposed: (reason: string) => void;
  /**
   * Asked before each attempt to take the lock: null to let this attempt pass (the scheduler leads
   * its share of shards already), or a function called once the attempt has ended, whatever its
   * outcome (so several shards' attempts at once cannot take more than the share). Unset: always try.
   */
  mayAcquire?: () => (() => void) | null;
  now?: () => number;
}

/**
 * Leadership by a Redis lock: `SET key value NX PX ttl` to acquire, a Lua compare-and-`PEXPIRE`
 * every `ttl/3` to hold, a Lua compare-and-`DEL` to release. A refresh that fails, or that cannot
 * be confirmed before the lease would end, deposes at once.
 *
 * A follower tries again every `ttl/3`, or just after the holder's lease runs out if that comes
 * sooner (it reads the lease's `PTTL` with each attempt): when a leader dies, its successor
 * takes over within milliseconds of the lease's end rather than up to `ttl/3` after it.
 */
export class LeaderElector {
  readonly token: string;
  private leading = false;
  /** The lease is known to hold until this instant (measured from when the refresh was sent). */
  private leaseUntil = 0;
  private loop: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private stopped = true;
  private ticking = false;
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisConnection,
    private readonly options: LeaderElectorOptions,
  ) {
    this.token = `${options.instanceId}:${randomBytes(8).toString('hex')}`;
    this.now = options.now ?? Date.now;
  }

  get isLeader(): boolean {
    return this.leading && this.now() < this.leaseUntil;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.tick(); // never rejects: a Redis error is best effort, tried again next period
  }

  /** Stops campaigning and releases the lock if held. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.loop) clearTimeout(this.loop);
    this.loop = null;
    const wasLeading = this.leading;
    this.depose('shutdown');
    if (wasLeading) await bestEffort(this.redis.eval(RELEASE, 1, this.options.key, this.token), 'leader.release');
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    const period = Math.max(50, Math.floor(this.options.ttlMs / 3));
    let next = period;
    const attempt = this.leading ? null : this.options.mayAcquire ? this.options.mayAcquire() : () => undefined;
    try {
      // A Redis error: a leader keeps its lease until the watchdog says it may have expired, a follower tries again next period.
      if (this.leading) await bestEffort(this.refresh(), 'leader.campaign');
      else if (attempt) next = Math.min(period, (await bestEffort(this.acquire(), 'leader.campaign')) ?? period);
    } finally {
      attempt?.();
      this.ticking = false;
    }
    if (!this.stopped) this.loop = setTimeout(() => void this.tick(), next);
  }

  /** Whether this instance holds the lock (as far as it knows), epoch taken or not. */
  get hasLock(): boolean {
    return this.leading;
  }

  /** Tries again now rather than at the next period (a shard was handed back, or the share grew). */
  nudge(): void {
    if (this.stopped || this.leading || this.ticking) return;
    if (this.loop) clearTimeout(this.loop);
    this.loop = null;
    void this.tick(); // never rejects (see start)
  }

  /** Tries to take the lock; returns how long until the holder's lease ends (Infinity if unknown). */
  private async acquire(): Promise<number> {
    const sentAt = this.now();
    // With the SET, in one MULTI: the remaining lease of whoever holds the lock, if it is taken.
    const replies = await this.redis
      .multi()
      .set(this.options.key, this.token, 'PX', this.options.ttlMs, 'NX')
      .pttl(this.options.key)
      .exec();
    const [acquired, remaining] = (replies ?? []).map(([error, value]) => (error ? null : value));
    if (acquired !== 'OK')
      return typeof remaining === 'number' && remaining >= 0 ? remaining + FOLLOWER_SLACK_MS : Infinity;
    if (this.stopped) return Infinity;
    this.leading = true;
    this.extendLease(sentAt);
    this.options.onElected();
    return Infinity;
  }

  private async refresh(): Promise<void> {
    const sentAt = this.now();
    const reply = await this.redis.eval(REFRESH, 1, this.options.key, this.token, String(this.options.ttlMs));
    if (!this.leading) return;
    if (reply === 1) this.extendLease(sentAt);
    else this.depose('lock lost');
  }

  private extendLease(sentAt: number): void {
    this.leaseUntil = sentAt + this.options.ttlMs;
    if (this.watchdog) clearTimeout(this.watchdog);
    // Step down a little before the lease could end on Redis' clock, whatever Redis says later.
    const margin = Math.min(200, Math.floor(this.options.ttlMs / 10));
    this.watchdog = setTimeout(
      () => this.depose('lease not confirmed in time'),
      Math.max(0, this.leaseUntil - margin - this.now()),
    );
  }

  /** Stops leading at once (also called by the planner when its epoch is fenced out). */
  depose(reason: string): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    if (!this.leading) return;
    this.leading = false;
    this.leaseUntil = 0;
    this.options.onDeposed(reason);
  }
}
