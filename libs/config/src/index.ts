/**
 * Punctual's configuration: the only reader of `process.env`, once, into a typed and frozen
 * `Config`; a bad value stops the process with one line naming the variable.
 *
 * @imports none
 * @packageDocumentation
 */
export { KNOWN_ENV_NAMES, MAX_SHARDS } from './config.schema.js';
export { type Config, ConfigError, type HostPort, loadConfig, loadConfigOrExit, type RedisTopology } from './config.js';
export { CONFIG, type ConfigFactory, ConfigModule } from './config.module.js';
