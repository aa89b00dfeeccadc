import pg from 'pg';
import type { Config } from '../../libs/config/src/index.js';
import { ExecutionDispatcher, PlannerService } from '../../libs/core/src/index.js';
import { ExecutionsRepository, PrismaService, SchedulerStateRepository, TasksRepository } from '../../libs/db/src/index.js';
import { Metrics } from '../../libs/observability/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { type Summary, summarize } from './stats.js';

/**
 * Inserts `count` tasks in one statement (names `<prefix>-<n>`), each with its cursor on
 * `nextRunAt`. `schedule` is SQL for the schedule columns: `cron`, `schedule_kind`, `run_at`.
 */
export async function insertTasks(
  db: pg.Client,
  count: number,
  options: { prefix: string; nextRunAt: Date; cron?: string; runAt?: Date; overlap?: 'skip' | 'allow' },
): Promise<string[]> {
  const kind = options.runAt ? 'at' : 'cron';
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO task (name, handler, schedule_kind, cron, run_at, secret, next_run_at, overlap)
     SELECT $1 || '-' || n, 'noop', $2::schedule_kind, $3, $4, md5(n::text), $5, $6::overlap_policy
     FROM generate_series(1, $7::int) AS n
     RETURNING id`,
    [options.prefix, kind, options.runAt ? null : (options.cron ?? '* * * * * *'), options.runAt ?? null, options.nextRunAt, options.overlap ?? 'skip', count],
  );
  return rows.map((r) => r.id);
}

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
export async function statusCounts(db: pg.Client, where = 'TRUE', params: unknown[] = []): Promise<Record<string, number>> {
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
  readonly prisma: PrismaService;
  readonly redis: RedisService;
  readonly queue: ExecutionsQueue;
  readonly executions: ExecutionsRepository;
  readonly state: SchedulerStateRepository;
  readonly planner: PlannerService;
  readonly dispatcher: ExecutionDispatcher;

  constructor(config: Config) {
    const metrics = new Metrics();
    this.prisma = new PrismaService(config);
    this.redis = new RedisService(config);
    this.queue = new ExecutionsQueue(this.redis);
    this.executions = new ExecutionsRepository(this.prisma);
    this.state = new SchedulerStateRepository(this.prisma);
    this.planner = new PlannerService(config, this.prisma, new TasksRepository(this.prisma), this.executions, this.state, metrics);
    this.dispatcher = new ExecutionDispatcher(config, this.queue, this.executions, metrics);
  }

  /** Connects and takes an epoch, as a newly elected leader does. */
  async lead(): Promise<bigint> {
    await this.prisma.onModuleInit();
    return this.state.bumpEpoch('bench');
  }

  async close(): Promise<void> {
    await this.queue.onApplicationShutdown();
    await this.redis.onApplicationShutdown();
    await this.prisma.onApplicationShutdown();
  }
}
