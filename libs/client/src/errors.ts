import type { ErrorCode, ErrorDetail } from '@punctual/contract';

/**
 * An error answer's code as this client reads it: one of the contract's {@link ErrorCode}s, or
 * `unknown` when the answer is not the API's envelope (a proxy's error page) or names a code this
 * client does not know (a newer API). Either way `status` and `message` still say what happened.
 */
export type PunctualErrorCode = ErrorCode | 'unknown';

/** An error answer of the API: its HTTP status and the envelope's `code`, `message` and `details`. */
export class PunctualApiError extends Error {
  override readonly name = 'PunctualApiError';
  constructor(
    readonly status: number,
    readonly code: PunctualErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
  }
}
