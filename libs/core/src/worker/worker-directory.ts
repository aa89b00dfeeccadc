import { Injectable } from '@nestjs/common';
import { RedisService } from '@punctual/redis';

/** How long a worker's entry lives without a refresh. */
const ENTRY_TTL_S = 45;

/**
 * Which handlers the live workers offer. Each worker refreshes an entry under
 * `<prefix>:workers:<instance>`; the API reads them back, so `GET /v1/handlers` is what can run now.
 */
@Injectable()
export class WorkerDirectory {
  constructor(private readonly redis: RedisService) {}

  async announce(instanceId: string, handlers: string[]): Promise<void> {
    await this.redis.client.set(this.redis.key('workers', instanceId), JSON.stringify({ handlers, at: new Date().toISOString() }), 'EX', ENTRY_TTL_S);
  }

  async withdraw(instanceId: string): Promise<void> {
    await this.redis.client.del(this.redis.key('workers', instanceId));
  }

  /** Every handler name offered by at least one live worker, with how many offer it. */
  async handlers(): Promise<{ name: string; workers: number }[]> {
    const counts = new Map<string, number>();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.client.scan(cursor, 'MATCH', this.redis.key('workers', '*'), 'COUNT', 500);
      cursor = next;
      const values = keys.length ? await this.redis.client.mget(...keys) : [];
      for (const value of values) {
        if (!value) continue;
        for (const name of (JSON.parse(value) as { handlers: string[] }).handlers) counts.set(name, (counts.get(name) ?? 0) + 1);
      }
    } while (cursor !== '0');
    return [...counts].map(([name, workers]) => ({ name, workers })).sort((a, b) => a.name.localeCompare(b.name));
  }
}
