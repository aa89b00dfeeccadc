import type { Config } from '../../libs/config/src/index.js';
import {
  AttemptsRepository,
  ClaimsRepository,
  ExecutionQueriesRepository,
  ExecutionTransitionsRepository,
  FlowControlRepository,
  HistoryPartitionsRepository,
  HistoryRoom,
  LeaderExecutionsRepository,
  LiveHorizonRepository,
  NamespacesRepository,
  PrismaService,
  SchedulerStateRepository,
  TaskCursorsRepository,
  TasksRepository,
  TurnsRepository,
} from '../../libs/db/src/index.js';
import { HandlerRegistry, type TaskHandlerImpl } from '../../libs/handlers/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { PlannerService } from '../../libs/scheduler/src/index.js';
import { type ClaimRequest, type Disposition, ExecutionClaimer, TurnHandover } from '../../libs/worker/src/index.js';
import { waitFor } from './processes.js';

const EVERY_HANDLER = ['noop', 'http', 'log', 'sleep', 'fail'];

/** A worker that offers these handlers (by default every handler the tests' tasks name: no claim is moved to another's queue). */
class Offering extends HandlerRegistry {
  constructor(private readonly offered: readonly string[] | null) {
    super(null as never); // nothing to discover: no Nest here
  }
  override get(name: string): TaskHandlerImpl | undefined {
    return this.offered === null || this.offered.includes(name) ? { run: async () => null } : undefined;
  }
  override names(): string[] {
    return [...(this.offered ?? EVERY_HANDLER)];
  }
}

/**
 * The repositories over a real database, built with `new` (no Nest), and `claim`: a worker's whole
 * claim of an attempt (read, judgement, write — see ExecutionClaimer), under `leaseMs` when given.
 */
export async function openRepositories(config: Config) {
  const prisma = new PrismaService(config);
  await prisma.onModuleInit();
  const claims = new ClaimsRepository(prisma);
  const partitions = new HistoryPartitionsRepository(prisma);
  const horizon = new LiveHorizonRepository(prisma, partitions);
  const room = new HistoryRoom(partitions, horizon, config);
  const executions = new ExecutionTransitionsRepository(prisma, room);
  const flow = new FlowControlRepository(prisma, claims);
  const turns = new TurnsRepository(prisma);
  let redis: RedisService | null = null;
  let queue: ExecutionsQueue | null = null;
  const metrics = new Metrics();
  const claimers = new Map<string, ExecutionClaimer>();
  /** The claimer of a worker with this lease, offering these handlers (default: every one). */
  const claimer = (leaseMs = config.leaseMs, offers: readonly string[] | null = null) => {
    redis ??= new RedisService(config);
    queue ??= new ExecutionsQueue(redis);
    const key = `${leaseMs} ${offers?.join(',') ?? '*'}`;
    if (!claimers.has(key)) {
      claimers.set(
        key,
        new ExecutionClaimer(
          { ...config, leaseMs },
          claims,
          executions,
          flow,
          turns,
          redis,
          metrics,
          new Offering(offers),
          new TurnHandover(turns, queue, metrics),
        ),
      );
    }
    return claimers.get(key)!;
  };
  return {
    prisma,
    claims,
    flow,
    turns,
    metrics,
    claim: (request: ClaimRequest, options: { leaseMs?: number; offers?: string[] } = {}): Promise<Disposition> =>
      claimer(options.leaseMs, options.offers).claim(request),
    claimer,
    tasks: new TasksRepository(prisma),
    cursors: new TaskCursorsRepository(prisma),
    executions,
    attempts: new AttemptsRepository(prisma),
    leader: new LeaderExecutionsRepository(prisma),
    queries: new ExecutionQueriesRepository(prisma),
    state: new SchedulerStateRepository(prisma),
    namespaces: new NamespacesRepository(prisma),
    partitions,
    horizon,
    room,
    /**
     * Partitions for rows a test inserts itself at these instants (a slot no leader made a partition
     * for: a day long past, 1970): `task_execution` is partitioned by slot.
     */
    historyAt: (...at: (Date | number)[]) =>
      partitions.ensureCovered(
        at.map((a) => new Date(a)),
        86_400_000,
      ),
    /**
     * Resolves once Postgres' clock — the one a claim is judged by — has passed `at`: a test waits
     * for a slot's instant, or a lease's end, rather than sleeping and hoping it came. By a whole
     * millisecond: `at` is a JavaScript instant, Postgres keeps microseconds.
     */
    clockPasses: (at: Date | number, what = 'the instant') =>
      waitFor(
        async () =>
          (
            await prisma.$queryRaw<
              { passed: boolean }[]
            >`SELECT clock_timestamp() > ${new Date(at).toISOString()}::timestamptz + interval '1 ms' AS passed`
          )[0]!.passed,
        10_000,
        `Postgres' clock to pass ${what}`,
        10,
      ),
    close: async () => {
      await queue?.onApplicationShutdown();
      await prisma.onApplicationShutdown();
      await redis?.onApplicationShutdown();
    },
  };
}

/** The leader's planner over these repositories, with `config` (a test drives it with a clock of its own). */
export function plannerOver(db: Awaited<ReturnType<typeof openRepositories>>, config: Config): PlannerService {
  return new PlannerService(config, db.prisma, db.cursors, db.executions, db.state, new Metrics(), db.room);
}
