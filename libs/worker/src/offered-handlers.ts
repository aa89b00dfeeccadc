import type { Logger } from '@nestjs/common';
import type { WorkerDirectory } from '@punctual/cluster';

/** How long the cluster's list of offered handlers is trusted before it is read again from Redis. */
const OFFERED_FOR_MS = 2_000;

/**
 * Where a handler this worker lacks can run: `elsewhere` (a live worker offers it), `nowhere` (the
 * directory was read and no live worker does), `unknown` (the directory could not be read).
 */
export type Offer = 'elsewhere' | 'nowhere' | 'unknown';

/**
 * Which handlers the cluster's live workers offer, as last read from the worker directory, and for
 * how long this worker has seen a handler offered by no one — without a break, directory reads
 * that failed counted as "no one": a directory emptied by a Redis restart or `FLUSHALL` fills again
 * as the workers re-announce, so an absence shorter than a full announce period means nothing.
 */
export class OfferedHandlers {
  private cached: { names: Promise<ReadonlySet<string> | null>; at: number } | null = null;
  /** Since when (performance.now()) each handler asked about has been offered by no one, as seen here. */
  private readonly missingSince = new Map<string, number>();

  constructor(
    private readonly directory: WorkerDirectory,
    private readonly logger: Logger,
  ) {}

  /** Where `handler` can run (the directory read from Redis at most every OFFERED_FOR_MS). */
  async lookup(handler: string): Promise<Offer> {
    if (!this.cached || performance.now() - this.cached.at > OFFERED_FOR_MS) {
      const names = this.directory.handlers().then(
        (offered): ReadonlySet<string> | null => new Set(offered.map((h) => h.name)),
        (error: unknown) => {
          this.logger.warn({ err: error }, 'could not read which handlers the workers offer; runs of a handler missing here wait');
          return null;
        },
      );
      this.cached = { names, at: performance.now() };
    }
    const names = await this.cached.names;
    const offer: Offer = names === null ? 'unknown' : names.has(handler) ? 'elsewhere' : 'nowhere';
    if (offer === 'elsewhere') this.missingSince.delete(handler);
    else if (!this.missingSince.has(handler)) {
      if (this.missingSince.size >= 1_000) this.missingSince.clear();
      this.missingSince.set(handler, performance.now());
    }
    return offer;
  }

  /** How long `handler` has been offered by no live worker, as this worker saw it at its last lookups (0: offered). */
  missingForMs(handler: string): number {
    const since = this.missingSince.get(handler);
    return since === undefined ? 0 : performance.now() - since;
  }
}
