/**
 * `@punctual/client`: a typed client of Punctual's HTTP API over `fetch` (Node 20 and browsers).
 *
 * @imports @punctual/contract
 * @packageDocumentation
 */
export { PunctualClient } from './client.js';
export { PunctualApiError, type PunctualErrorCode } from './errors.js';
export { Paginated } from './paginated.js';
export type { PunctualClientOptions } from './transport.js';
