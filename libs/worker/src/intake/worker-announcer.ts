import { Injectable } from '@nestjs/common';
import { WORKER_ENTRY_TTL_S, type WorkerEntry, WORKERS_KEY } from '@punctual/queue';
import { RedisService } from '@punctual/redis';

/**
 * How often a live worker refreshes its entry (and at once when its Redis connection comes back):
 * a directory emptied by a Redis restart or `FLUSHALL` is whole again within this.
 */
export const ANNOUNCE_MS = 5_000;

/**
 * A worker's side of the live workers' directory: its entry under `<prefix>:workers:<instance>`
 * (the handlers it offers, its handler slots), refreshed while it runs and withdrawn when it stops.
 * The cluster's `WorkerDirectory` reads the entries back.
 */
@Injectable()
export class WorkerAnnouncer {
  constructor(private readonly redis: RedisService) {}

  async announce(instanceId: string, handlers: string[], concurrency: number): Promise<void> {
    const entry: WorkerEntry = { handlers, concurrency, at: new Date().toISOString() };
    await this.redis.client.set(
      this.redis.key(WORKERS_KEY, instanceId),
      JSON.stringify(entry),
      'EX',
      WORKER_ENTRY_TTL_S,
    );
  }

  async withdraw(instanceId: string): Promise<void> {
    await this.redis.client.del(this.redis.key(WORKERS_KEY, instanceId));
  }
}
