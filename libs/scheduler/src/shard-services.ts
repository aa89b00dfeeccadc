import type { Config } from '@punctual/config';
import type { ClockService } from '@punctual/clock';
import type { HandlerQueues } from '@punctual/cluster';
import type {
  LeaderExecutionsRepository,
  NamespacesRepository,
  SchedulerStateRepository,
  TurnsRepository,
} from '@punctual/db';
import type { Metrics } from '@punctual/metrics';
import type { RedisService } from '@punctual/redis';
import type { ExecutionDispatcher } from './execution-dispatcher.js';
import type { PlannerService } from './planner.service.js';
import type { RelayService } from './relay.service.js';

/** Leadership: the shard's Redis lock, its epoch and history in Postgres. */
export interface ShardLockServices {
  redis: RedisService;
  state: SchedulerStateRepository;
  config: Pick<Config, 'instanceId' | 'leaderTtlMs'>;
}

/** Planning: the shard's due slots written ahead, every tick and when the API announces a change. */
export interface ShardPlanningServices {
  planner: PlannerService;
  config: Pick<Config, 'planTickMs'>;
}

/** Firing: planned rows pushed to their handlers' queues at their `fire_at` (or parked, when they may only wait). */
export interface ShardFiringServices {
  dispatcher: ExecutionDispatcher;
  turns: TurnsRepository;
  config: Pick<Config, 'fireLeadMs'>;
}

/** Upkeep: adoption and sweeps of planned rows, late slots by their misfire policy, the relay's repairs, the queues' gauges. */
export interface ShardUpkeepServices {
  executions: LeaderExecutionsRepository;
  relay: RelayService;
  handlerQueues: HandlerQueues;
  namespaces: NamespacesRepository;
  config: Pick<Config, 'relayGraceMs' | 'lookaheadMs' | 'catchupMax' | 'catchupRate'>;
}

/**
 * What a shard's leader needs, by part — each part only what it uses — and the clock and metrics
 * every part reads. One scheduler process gives the same services to each of its shards' leaders.
 */
export interface ShardServices {
  clock: ClockService;
  metrics: Metrics;
  lock: ShardLockServices;
  planning: ShardPlanningServices;
  firing: ShardFiringServices;
  upkeep: ShardUpkeepServices;
}
