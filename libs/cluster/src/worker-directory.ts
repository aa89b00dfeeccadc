import { Injectable } from '@nestjs/common';
import { type WorkerEntry, WORKERS_KEY } from '@punctual/queue';
import { RedisService } from '@punctual/redis';

/**
 * Which handlers the live workers offer, read from the directory each worker keeps its entry in
 * (`<prefix>:workers:<instance>`, written by the worker's `WorkerAnnouncer`): `GET /v1/handlers`
 * is what can run now, and the handler queues and the cluster view read the same.
 */
@Injectable()
export class WorkerDirectory {
  constructor(private readonly redis: RedisService) {}

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
    const workers = (await this.redis.entries(WORKERS_KEY)).map(([instance, value]) => {
      const entry = JSON.parse(value) as Partial<WorkerEntry>;
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
