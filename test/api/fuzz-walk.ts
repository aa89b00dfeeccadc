/**
 * Walks every field of a complete request body and puts a value of the wrong kind in its place.
 * The paths come from the body itself, so a field added to a body is fuzzed without being listed.
 */
export type FieldPath = (string | number)[];

/** What every field is replaced with: the wrong JSON types, and strings that tempt a number parser. */
export const REPLACEMENTS: [label: string, value: unknown][] = [
  ['null', null],
  ['number', 12345],
  ['array', [1, {}]],
  ['object', { unexpected: 1 }],
  ['empty', ''],
  ['10kB', 'x'.repeat(10 * 1024)],
  ['NaN', 'NaN'],
  ['Infinity', 'Infinity'],
  ['-0', '-0'],
  ['1e999', '1e999'],
];

/** Fields whose inside is free-form JSON: the field itself is fuzzed, not what it contains. */
const OPAQUE = new Set(['payload', 'result']);

/** Every path in `body`, parents before children; array elements by index. */
export function fieldPaths(body: unknown, prefix: FieldPath = []): FieldPath[] {
  if (body === null || typeof body !== 'object') return [];
  const paths: FieldPath[] = [];
  const entries: [string | number, unknown][] = Array.isArray(body) ? body.map((v, i) => [i, v]) : Object.entries(body);
  for (const [key, value] of entries) {
    const path = [...prefix, key];
    paths.push(path);
    if (!(typeof key === 'string' && OPAQUE.has(key))) paths.push(...fieldPaths(value, path));
  }
  return paths;
}

/** `schedule.dst.gap`, `notify.on[0]`. */
export function pathLabel(path: FieldPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** A copy of `body` with the value at `path` replaced. */
export function withValueAt<T>(body: T, path: FieldPath, value: unknown): T {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
  return copy as T;
}
