/**
 * What operators and orchestrators read from a running process: `/health/live` and
 * `/health/ready` (Postgres, Redis, migrations), `/metrics` (the registry, behind METRICS_TOKEN),
 * and `StoreMetrics`, the gauges of what the stores hold (dead letters, outbox, flow-control keys,
 * task health, Redis' eviction policy). The read-only view of the stores for operations lives
 * here, apart from the roles that change them.
 *
 * @imports @punctual/auth, @punctual/config, @punctual/db, @punctual/metrics, @punctual/planning, @punctual/redis
 * @packageDocumentation
 */
export { HEALTH_DETAILS, HealthController, type HealthDetails } from './health.controller.js';
export { MetricsController } from './metrics.controller.js';
export { StoreMetrics } from './store-metrics.js';
