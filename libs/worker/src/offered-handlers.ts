import type { Logger } from '@nestjs/common';
import type { WorkerDirectory } from '@punctual/cluster';

/** How long the cluster's list of offered handlers is trusted before it is read again from Redis. */
const OFFERED_FOR_MS = 2_000;

/** Which handlers the cluster's live workers offer, as last read from the worker directory. */
export class OfferedHandlers {
  private cached: { names: Promise<ReadonlySet<string>>; at: number } | null = null;

  constructor(
    private readonly directory: WorkerDirectory,
    private readonly logger: Logger,
  ) {}

  /** Whether a live worker of the cluster offers `handler` (read from Redis at most every OFFERED_FOR_MS). */
  async offered(handler: string): Promise<boolean> {
    if (!this.cached || performance.now() - this.cached.at > OFFERED_FOR_MS) {
      const names = this.directory.handlers().then(
        (offered) => new Set(offered.map((h) => h.name)),
        (error: unknown) => {
          this.logger.warn({ err: error }, 'could not read which handlers the workers offer; runs of a handler missing here are run here (and end dead)');
          return new Set<string>();
        },
      );
      this.cached = { names, at: performance.now() };
    }
    return (await this.cached.names).has(handler);
  }
}
