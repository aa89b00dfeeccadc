import type { ErrorDetail } from '@punctual/contract';

/** An error answer of the API: its HTTP status and the envelope's `code`, `message` and `details`. */
export class PunctualApiError extends Error {
  override readonly name = 'PunctualApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
  }
}
