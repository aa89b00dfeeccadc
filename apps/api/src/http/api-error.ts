import { HttpException } from '@nestjs/common';
import type { ErrorCode, ErrorDetail, ErrorEnvelope } from '@punctual/contract';

/** The body of every error answer (DESIGN §7), its code one of the contract's. */
export function errorEnvelope(code: ErrorCode, message: string, details: ErrorDetail[] = []): ErrorEnvelope {
  return { error: { code, message, details } };
}

/** An error response in the format of DESIGN §7: `{ error: { code, message, details } }`. */
export class ApiError extends HttpException {
  constructor(status: number, code: ErrorCode, message: string, details: ErrorDetail[] = []) {
    super(errorEnvelope(code, message, details), status);
  }
}
