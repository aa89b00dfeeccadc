/**
 * The scheduler role: leadership of each shard by a Redis lease (`LeaderElector`) fenced by a
 * Postgres epoch, planning due slots into executions, firing them to the queue on time, deciding
 * late slots, and the relay that repairs what Redis lost.
 *
 * @imports @punctual/clock, @punctual/cluster, @punctual/config, @punctual/contract, @punctual/db, @punctual/metrics, @punctual/planning, @punctual/queue, @punctual/redis, @punctual/tracing
 * @packageDocumentation
 */
export { FencedOutError, ShardCountMismatchError } from './errors.js';
export { type PushOptions, ExecutionDispatcher, GROUP_FROM, GROUP_SIZE } from './execution-dispatcher.js';
export { type Fireable, FireTimer } from './fire-timer.js';
export { LeaderElector, type LeaderElectorOptions } from './leader-elector.js';
export { leaderDbSession } from './leader-session.js';
export { ONE_OFF_LOOKAHEAD_MS, PLAN_STRIDE_MS, PlannerService } from './planner.service.js';
export { RelayService } from './relay.service.js';
export { SchedulerCoreModule } from './scheduler.module.js';
export { SchedulerService } from './scheduler.service.js';
export { type HistoryPass, HistoryKeeper } from './history-keeper.js';
