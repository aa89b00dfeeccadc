export const REDACTED = '[redacted]';

/**
 * A copy of `payload` with the values at `secretFields` (dot paths, e.g. `headers.authorization`)
 * replaced by `[redacted]`, for anything shown or logged. The original is left untouched.
 */
export function redactPayload(payload: unknown, secretFields: readonly string[]): unknown {
  if (secretFields.length === 0 || payload === null || typeof payload !== 'object') return payload;
  const copy = structuredClone(payload) as Record<string, unknown>;
  for (const path of secretFields) {
    const parts = path.split('.');
    let node: unknown = copy;
    for (const part of parts.slice(0, -1))
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
    const last = parts[parts.length - 1]!;
    if (node && typeof node === 'object' && last in (node as object))
      (node as Record<string, unknown>)[last] = REDACTED;
  }
  return copy;
}
