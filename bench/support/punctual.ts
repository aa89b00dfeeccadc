import pg from 'pg';
import type { Config } from '../../libs/config/src/index.js';
import type { ShardFence } from '../../libs/db/src/index.js';
import { ExecutionDispatcher, PlannerService } from '../../libs/scheduler/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { openRepositories } from '../../test/support/repositories.js';
import { type Summary, summarize } from './stats.js';

/** Start lag (`started_at − fire_at`, ms) of first attempts whose slot lies in `[from, to)`. */
export async function startLags(db: pg.Client, from: number, to: number): Promise<Summary> {
  const { rows } = await db.query<{ lag: number }>(
    `SELECT extract(epoch FROM started_at - fire_at) * 1000 AS lag FROM task_execution
     WHERE scheduled_for >= $1 AND scheduled_for < $2 AND started_at IS NOT NULL AND attempt = 1`,
    [new Date(from), new Date(to)],
  );
  return summarize(rows.map((r) => Number(r.lag)));
}

/** Counts executions by `status` (or `status:skip_reason`). */
export async function statusCounts(
  db: pg.Client,
  where = 'TRUE',
  params: unknown[] = [],
): Promise<Record<string, number>> {
  const { rows } = await db.query<{ key: string; n: number }>(
    `SELECT status || coalesce(':' || skip_reason, '') AS key, count(*)::int AS n FROM task_execution WHERE ${where} GROUP BY 1`,
    params,
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.n]));
}

/**
 * The scheduler's parts built with `new`, as the scheduler role wires them, in this process: for
 * scenarios that time one step (planning, firing) without a leader election around it.
 */
export class InProcessScheduler {
  private constructor(
    private readonly db: Awaited<ReturnType<typeof openRepositories>>,
    private readonly redis: RedisService,
    private readonly queue: ExecutionsQueue,
    readonly planner: PlannerService,
    readonly dispatcher: ExecutionDispatcher,
  ) {}

  static async open(config: Config): Promise<InProcessScheduler> {
    const db = await openRepositories(config);
    const metrics = new Metrics();
    const redis = new RedisService(config);
    const queue = new ExecutionsQueue(redis);
    return new InProcessScheduler(
      db,
      redis,
      queue,
      new PlannerService(config, db.prisma, db.cursors, db.executions, db.state, metrics, db.room),
      new ExecutionDispatcher(config, queue, metrics),
    );
  }

  /** Takes an epoch, as a newly elected leader does. */
  lead(): Promise<bigint> {
    return this.db.state.bumpEpoch('bench');
  }

  /** Takes the epochs of `shards` (of a cluster of `count` shards), as the leader of each does. */
  async leadShards(count: number, shards: number[]): Promise<ShardFence[]> {
    if ((await this.db.state.adoptShardCount(count)) !== count)
      throw new Error(`the sandbox has another shard count than ${count}`);
    return Promise.all(
      shards.map(async (shard) => ({ shard, shards: count, epoch: await this.db.state.bumpEpoch('bench', shard) })),
    );
  }

  /**
   * Plans every slot due at `now` of the shards `fences` lead, the shards side by side (as the shard
   * leaders of one scheduler process do): slots planned, seconds, and this process's CPU time.
   */
  async planShards(fences: ShardFence[], now: Date): Promise<{ slots: number; seconds: number; cpuMs: number }> {
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const counts = await Promise.all(
      fences.map(async (fence) => {
        let slots = 0;
        for (;;) {
          const planned = await this.planner.planDueSlots(fence, () => now);
          if (planned.length === 0) return slots;
          slots += planned.length;
        }
      }),
    );
    const used = process.cpuUsage(cpu);
    return {
      slots: counts.reduce((a, b) => a + b, 0),
      seconds: (performance.now() - t0) / 1000,
      cpuMs: (used.user + used.system) / 1000,
    };
  }

  async close(): Promise<void> {
    await this.queue.onApplicationShutdown();
    await this.redis.onApplicationShutdown();
    await this.db.close();
  }
}
