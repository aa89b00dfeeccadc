/**
 * One clock for the whole cluster, Postgres': each process measures its offset to it, reads the
 * time through `ClockService`, exports the offset and publishes it for the cluster view. It
 * imports `db` and `redis` on purpose: the clock it reads *is* Postgres' (each sample is a query
 * on the app's own pool, so its round trip is the one the app's statements see), and the offset
 * it publishes goes to Redis, where the cluster view reads every process's. The pure part (the
 * offset from samples) needs neither.
 *
 * @imports @punctual/config, @punctual/db, @punctual/metrics, @punctual/redis
 * @packageDocumentation
 */
export { ClockModule } from './clock.module.js';
export { CLOCK_ROLE, ClockService } from './clock.service.js';
export { type ClockSample, offsetFromSamples, sampleClock } from './clock-offset.js';
