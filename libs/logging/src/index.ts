/**
 * Logs of a process: pino as Nest's logger (`PinoNestLogger`), JSON lines with the app and
 * instance on each (readable lines in development), one line per HTTP request, secrets redacted.
 *
 * @imports @punctual/config
 * @packageDocumentation
 */
export { createPino, LoggingModule, REDACTED_PATHS } from './logging.module.js';
export { PinoNestLogger } from './pino-logger.js';
export { StartUpAtDebug } from './pretty-logs.js';
