import { WorkerDirectory } from '../../libs/cluster/src/index.js';
import type { Config } from '../../libs/config/src/index.js';
import {
  AttemptsRepository,
  ClaimsRepository,
  ExecutionQueriesRepository,
  ExecutionTransitionsRepository,
  FlowControlRepository,
  LeaderExecutionsRepository,
  PrismaService,
  SchedulerStateRepository,
  TasksRepository,
  TurnsRepository,
} from '../../libs/db/src/index.js';
import { HandlerRegistry, type TaskHandlerImpl } from '../../libs/handlers/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { ExecutionsQueue } from '../../libs/queue/src/index.js';
import { RedisService } from '../../libs/redis/src/index.js';
import { type ClaimRequest, type Disposition, ExecutionClaimer } from '../../libs/worker/src/index.js';
import { waitFor } from './processes.js';

/** A worker that offers every handler: the claims these tests make are never sent elsewhere for one. */
class EveryHandler extends HandlerRegistry {
  constructor() {
    super(null as never); // nothing to discover: no Nest here
  }
  override get(): TaskHandlerImpl {
    return { run: async () => null };
  }
  override names(): string[] {
    return ['noop', 'http', 'log', 'sleep', 'fail'];
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
  const executions = new ExecutionTransitionsRepository(prisma);
  const flow = new FlowControlRepository(prisma, claims);
  const turns = new TurnsRepository(prisma);
  let redis: RedisService | null = null;
  let queue: ExecutionsQueue | null = null;
  const claimers = new Map<number, ExecutionClaimer>();
  const metrics = new Metrics();
  const claimer = (leaseMs = config.leaseMs) => {
    redis ??= new RedisService(config);
    queue ??= new ExecutionsQueue(redis);
    if (!claimers.has(leaseMs)) {
      claimers.set(leaseMs, new ExecutionClaimer({ ...config, leaseMs }, claims, executions, flow, turns, redis, metrics, new EveryHandler(), new WorkerDirectory(redis), queue));
    }
    return claimers.get(leaseMs)!;
  };
  return {
    prisma,
    claims,
    flow,
    turns,
    metrics,
    claim: (request: ClaimRequest, options: { leaseMs?: number } = {}): Promise<Disposition> => claimer(options.leaseMs).claim(request),
    claimer,
    tasks: new TasksRepository(prisma),
    executions,
    attempts: new AttemptsRepository(prisma),
    leader: new LeaderExecutionsRepository(prisma),
    queries: new ExecutionQueriesRepository(prisma),
    state: new SchedulerStateRepository(prisma),
    /**
     * Resolves once Postgres' clock — the one a claim is judged by — has passed `at`: a test waits
     * for a slot's instant, or a lease's end, rather than sleeping and hoping it came. By a whole
     * millisecond: `at` is a JavaScript instant, Postgres keeps microseconds.
     */
    clockPasses: (at: Date | number, what = 'the instant') =>
      waitFor(async () => (await prisma.$queryRaw<{ passed: boolean }[]>`SELECT clock_timestamp() > ${new Date(at).toISOString()}::timestamptz + interval '1 ms' AS passed`)[0]!.passed, 10_000, `Postgres' clock to pass ${what}`, 10),
    close: async () => {
      await queue?.onApplicationShutdown();
      await prisma.onApplicationShutdown();
      await redis?.onApplicationShutdown();
    },
  };
}
