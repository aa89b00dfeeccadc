export { startApp } from './bootstrap.js';
export { HEALTH_DETAILS, HealthController, type HealthDetails } from './health.controller.js';
export { LoggingModule, REDACTED_PATHS } from './logging.module.js';
export { Public, PUBLIC_ROUTE } from './public.decorator.js';
export { Metrics } from './metrics.js';
export { MetricsModule } from './metrics.module.js';
export { MetricsController } from './metrics.controller.js';
export { REDACTED, redactPayload } from './redact.js';
