export { blockedReason, canonicalIp } from './address-policy.js';
export { HttpHandler } from './http.handler.js';
export { type HttpResult } from './http-outcome.js';
export { type HttpPayload, parseHttpPayload } from './http-payload.js';
export {
  encodeBody,
  MAX_RESPONSE_BYTES,
  RequestTimeoutError,
  RESERVED_HEADERS,
  type SignedRequest,
  type SignedResponse,
  sendSigned,
  signBody,
} from './signed-request.js';
export {
  BlockedDestinationError,
  type Lookup,
  type ResolvedAddress,
  type ResolveOptions,
  resolveDestination,
} from './ssrf-guard.js';
