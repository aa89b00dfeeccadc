import { Injectable } from '@nestjs/common';
import { RedisService } from '@punctual/redis';

interface Entry {
  handlers: string[];
  concurrency: number;
  at: string;
}

/** How long a worker's entry lives without a refresh. */
const ENTRY_TTL_S = 45;
/**
 * How often a live worker refreshes its entry (and at once when its Redis connection comes back):
 * a directory emptied by a Redis restart or `FLUSHALL` is whole again within this.
 */
export const ANNOUNCE_MS = 5_000;

/**
 * Which handlers the live workers offer. Each worker refreshes an entry under
 * `<prefix>:workers:<instance>`; the API reads them back, so `GET /v1/handlers` is what can run now.
 */
@Injectable()
export class WorkerDirectory {
  constructor(private readonly redis: RedisService) {}

  async announce(instanceId: string, handlers: string[], concurrency: number): Promise<void> {
    const entry: Entry = { handlers, concurrency, at: new Date().toISOString() };
    await this.redis.client.set(this.redis.key('workers', instanceId), JSON.stringify(entry), 'EX', ENTRY_TTL_S);
  }

  async withdraw(instanceId: string): Promise<void> {
    await this.redis.client.del(this.redis.key('workers', instanceId));
  }

  /** Every handler name offered by at least one live worker, with how many offer it. */
  async handlers(): Promise<{ name: string; workers: number }[]> {
    const counts = new Map<string, number>();
    for (const worker of await this.workers())
      for (const name of worker.handlers) counts.set(name, (counts.get(name) ?? 0) + 1);
    return [...counts].map(([name, workers]) => ({ name, workers })).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The live workers: their handlers and concurrency (null from a worker that did not say). */
  async workers(): Promise<
    { instance: string; handlers: string[]; concurrency: number | null; seenAt: string | null }[]
  > {
    const workers = (await this.redis.entries('workers')).map(([instance, value]) => {
      const entry = JSON.parse(value) as Partial<Entry>;
      return {
        instance,
        handlers: entry.handlers ?? [],
        concurrency: entry.concurrency ?? null,
        seenAt: entry.at ?? null,
      };
    });
    return workers.sort((a, b) => a.instance.localeCompare(b.instance));
  }
}
