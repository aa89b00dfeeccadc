import { InvalidCursorError } from './errors.js';

/** Opaque keyset cursors: base64url JSON of the last item's sort key. */
export function encodeCursor(value: Record<string, string>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The sort key in a cursor; {@link InvalidCursorError} unless it holds every field named, each a string. */
export function decodeCursor<T extends Record<string, string>>(cursor: string, ...fields: (keyof T & string)[]): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    // Not JSON at all: refused below like any other cursor this API did not write.
    value = null;
  }
  const valid =
    value !== null &&
    typeof value === 'object' &&
    fields.every((f) => typeof (value as Record<string, unknown>)[f] === 'string');
  if (!valid) throw new InvalidCursorError();
  return value as T;
}

/** The cursor of the page after `items` (`sortKey` of its last item), or null when `items` is not a full page: the last one. */
export function nextCursor<T>(
  items: readonly T[],
  limit: number,
  sortKey: (item: T) => Record<string, string>,
): string | null {
  return items.length === limit && items.length > 0 ? encodeCursor(sortKey(items[items.length - 1]!)) : null;
}
