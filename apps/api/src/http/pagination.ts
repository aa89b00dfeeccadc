import { ApiError } from './api-error.js';

/** Opaque keyset cursors: base64url JSON of the last item's sort key. */
export function encodeCursor(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The sort key in a cursor; 400 unless it holds every field named, each a string. */
export function decodeCursor<T extends Record<string, string>>(cursor: string, ...fields: (keyof T & string)[]): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = null;
  }
  const valid = value !== null && typeof value === 'object' && fields.every((f) => typeof (value as Record<string, unknown>)[f] === 'string');
  if (!valid) throw new ApiError(400, 'invalid_cursor', 'cursor is not one this API returned', [{ field: 'cursor', message: 'invalid cursor' }]);
  return value as T;
}
