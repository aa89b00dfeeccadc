export { HttpHandler } from './http.handler.js';
export { type SignedRequest, type SignedResponse, sendSigned, signBody } from './signed-request.js';
export { blockedReason, BlockedDestinationError, type Lookup, resolveDestination } from './ssrf.js';
