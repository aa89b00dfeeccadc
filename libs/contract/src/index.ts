/**
 * Punctual's wire contract: zod schemas of every request and response, the limits and defaults,
 * the table of routes, and `redactPayload`, which hides a task's secret fields wherever a payload
 * is shown or logged. No Node, Nest or Prisma here: the API, the client, the CLI and the
 * browser console all import it.
 *
 * @imports none
 * @packageDocumentation
 */
export * from './actions.js';
export * from './apply.js';
export * from './admin.js';
export * from './calendar.js';
export * from './changes.js';
export * from './common.js';
export * from './enums.js';
export * from './error-codes.js';
export * from './execution.js';
export * from './execution-id.js';
export * from './limits.js';
export * from './namespace.js';
export * from './routes.js';
export * from './issues.js';
export * from './redact.js';
export * from './suggest.js';
export * from './task.js';
export * from './timeline.js';
export * from './storable-text.js';
