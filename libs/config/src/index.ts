export { KNOWN_ENV_NAMES } from './config.schema.js';
export { type Config, ConfigError, loadConfig, loadConfigOrExit } from './config.js';
export { CONFIG, type ConfigFactory, ConfigModule } from './config.module.js';
