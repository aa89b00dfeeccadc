import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { PrismaService } from '@punctual/db';
import { bestEffort, Metrics } from '@punctual/metrics';
import { RedisService } from '@punctual/redis';
import { offsetFromSamples, sampleClock } from './clock-offset.js';

/** Which role's clock this is (a label of the offset metric, and of the cluster view). */
export const CLOCK_ROLE = Symbol('punctual.clock-role');

const REMEASURE_MS = 60_000;
/** An offset beyond this is an error worth a page: firing and lateness are judged by it. */
const OFFSET_ALARM_MS = 1_000;
/** How long the cluster view keeps a process's last reading after it stops refreshing it. */
const PUBLISHED_TTL_S = 3 * (REMEASURE_MS / 1000);

/**
 * One clock for the whole cluster: Postgres'. Every role measures its offset to it at start and
 * every minute (the leader also at election) and reads the time through {@link now}, so a leader
 * and a worker whose wall clocks disagree still agree on when a slot is due and when it is late.
 * The offset is exported (`punctual_clock_offset_seconds{role}`) and shown in `GET /v1/cluster`.
 */
@Injectable()
export class ClockService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ClockService.name);
  private offsetMs = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(CLOCK_ROLE) private readonly role: string,
    private readonly prisma: PrismaService,
    private readonly redis: RedisService,
    private readonly metrics: Metrics,
  ) {}

  /** Now, by Postgres' clock (epoch ms). */
  now(): number {
    return Date.now() + this.offsetMs;
  }

  date(): Date {
    return new Date(this.now());
  }

  /** Postgres' clock minus this process's, as last measured (ms). */
  get offset(): number {
    return this.offsetMs;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.measure();
    this.timer = setInterval(() => void this.measure(), REMEASURE_MS); // never rejects: it keeps the last
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Measures the offset again; a failure keeps the last one (and says so). */
  async measure(): Promise<number> {
    try {
      const samples = await sampleClock(
        async () => (await this.prisma.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`)[0]!.now,
      );
      this.offsetMs = offsetFromSamples(samples);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not measure the clock offset to Postgres; keeping the last one');
      return this.offsetMs;
    }
    this.metrics.clockOffset.set({ role: this.role }, this.offsetMs / 1000);
    const fields = { role: this.role, offsetMs: this.offsetMs };
    if (Math.abs(this.offsetMs) > OFFSET_ALARM_MS)
      this.logger.error(fields, 'this clock is more than 1 s off Postgres; fix NTP on this host');
    else this.logger.debug(fields, 'clock offset to Postgres measured');
    const key = this.redis.key('clock', this.role, this.config.instanceId);
    await bestEffort(
      this.redis.client.set(
        key,
        JSON.stringify({ offsetMs: this.offsetMs, measuredAt: new Date().toISOString() }),
        'EX',
        PUBLISHED_TTL_S,
      ),
      'clock.publish-offset',
    );
    return this.offsetMs;
  }
}
