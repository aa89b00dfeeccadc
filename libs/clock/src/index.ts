/**
 * One clock for the whole cluster, Postgres': each process measures its offset to it, reads the
 * time through `ClockService`, exports the offset and publishes it for the cluster view.
 *
 * @imports @punctual/config, @punctual/db, @punctual/metrics, @punctual/redis
 * @packageDocumentation
 */
export { ClockModule } from './clock.module.js';
export { CLOCK_ROLE, ClockService } from './clock.service.js';
export { type ClockSample, offsetFromSamples, sampleClock } from './clock-offset.js';
