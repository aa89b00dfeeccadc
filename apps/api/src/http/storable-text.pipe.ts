import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { fieldPath, findUnstorable } from '@punctual/contract';
import { ApiError } from './api-error.js';

/**
 * Refuses any request string Postgres could not store — a NUL character (U+0000) or a lone UTF-16
 * surrogate — in a body (values and keys: payload, keys, names, labels, calendar fields), a query
 * or a path parameter: 422 `invalid_text` naming the field, before anything is written. Without it
 * the write itself fails, as an error the client would see as a 500.
 */
export class StorableTextPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'custom') return value;
    const found = findUnstorable(value);
    if (!found) return value;
    const path = metadata.type === 'param' && metadata.data ? [metadata.data, ...found.path] : found.path;
    const field = fieldPath(path) || (metadata.type === 'body' ? '(body)' : metadata.type);
    const message = `${field} ${found.reason}`;
    throw new ApiError(422, 'invalid_text', message, [{ field, message }]);
  }
}
