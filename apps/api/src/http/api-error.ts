import { HttpException } from '@nestjs/common';

export interface ErrorDetail {
  field: string;
  message: string;
}

/** An error response in the format of DESIGN §7: `{ error: { code, message, details } }`. */
export class ApiError extends HttpException {
  constructor(status: number, code: string, message: string, details: ErrorDetail[] = []) {
    super({ error: { code, message, details } }, status);
  }
}
