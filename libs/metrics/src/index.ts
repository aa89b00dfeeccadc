/**
 * The Prometheus metrics of a process (one registry, prefix `punctual_`), and `bestEffort`, which
 * logs and counts the failures of work allowed to fail. Imports no other lib, so that every lib
 * may count, the lowest included.
 *
 * @imports none
 * @packageDocumentation
 */
export { BEST_EFFORT_SITES, bestEffort, bestEffortFailures, type BestEffortSite } from './best-effort.js';
export { Metrics } from './metrics.js';
export { MetricsModule } from './metrics.module.js';
