import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ApiError, type ErrorDetail } from './api-error.js';

// Constraints that say the JSON has the wrong shape (400); any other failed rule means a
// well-formed value with an impossible meaning (422).
const SHAPE_CONSTRAINTS = new Set(['isString', 'isInt', 'isBoolean', 'isObject', 'isArray', 'whitelistValidation', 'nestedValidation', 'isDefined']);

/** Validates bodies against their DTO; unknown fields are refused; errors name the field path. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const details: { detail: ErrorDetail; shape: boolean }[] = [];
      collect(errors, '', details);
      const malformed = details.some((d) => d.shape);
      return new ApiError(
        malformed ? 400 : 422,
        malformed ? 'invalid_request' : 'validation_failed',
        details.map((d) => d.detail.message).join('; ') || 'the request body is invalid',
        details.map((d) => d.detail),
      );
    },
  });
}

function collect(errors: ValidationError[], prefix: string, out: { detail: ErrorDetail; shape: boolean }[]): void {
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    for (const [constraint, message] of Object.entries(error.constraints ?? {})) {
      const text = constraint === 'whitelistValidation' ? `${field} is not a known field` : message.replace(error.property, field);
      out.push({ detail: { field, message: text }, shape: SHAPE_CONSTRAINTS.has(constraint) });
    }
    if (error.children?.length) collect(error.children, field, out);
  }
}
