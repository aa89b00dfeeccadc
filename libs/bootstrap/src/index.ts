/**
 * Start-up shared by every app's `main.ts`: pino as Nest's logger, a clean stop on SIGTERM and
 * SIGINT (the app closes, the process exits 0), and listening on the app's port.
 *
 * @imports @punctual/config, @punctual/logging
 * @packageDocumentation
 */
export { startApp } from './bootstrap.js';
