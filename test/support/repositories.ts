import type { Config } from '../../libs/config/src/index.js';
import {
  AttemptsRepository,
  ExecutionQueriesRepository,
  ExecutionTransitionsRepository,
  LeaderExecutionsRepository,
  PrismaService,
  SchedulerStateRepository,
  TasksRepository,
} from '../../libs/db/src/index.js';

/** The repositories over a real database, built with `new` (no Nest). */
export async function openRepositories(config: Config) {
  const prisma = new PrismaService(config);
  await prisma.onModuleInit();
  return {
    prisma,
    tasks: new TasksRepository(prisma),
    executions: new ExecutionTransitionsRepository(prisma),
    attempts: new AttemptsRepository(prisma),
    leader: new LeaderExecutionsRepository(prisma),
    queries: new ExecutionQueriesRepository(prisma),
    state: new SchedulerStateRepository(prisma),
    close: () => prisma.onApplicationShutdown(),
  };
}
