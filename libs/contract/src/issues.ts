import type { z } from 'zod';
import { nearestName } from './suggest.js';

/**
 * One problem of a value a schema refused, read for a person: `missing` when a required field was
 * left out, `unknown` (with the nearest known name, if one is close) when a field is not in the
 * schema — one per unknown key — else the schema's own `issue`.
 */
export interface ReadIssue {
  /** The path of the field, an unknown key included. */
  path: (string | number)[];
  issue: z.core.$ZodIssue;
  missing: boolean;
  unknown?: { key: string; suggestion?: string };
}

/**
 * `schema.safeParse(value)`, its issues read by {@link ReadIssue}. A missing field that an unknown
 * key's suggestion names is one mistake (`handlr` for `handler`): only the suggestion is kept. The
 * API's 400s and the command line's task files both word their errors from this.
 */
export function parseExplained<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { success: true; data: T } | { success: false; issues: ReadIssue[] } {
  // The fields each object that met an unknown key knows, by its path: only the object that refused
  // the key (a union's branch, say) knows its shape, and zod shows it only to an error map.
  const known = new Map<string, string[]>();
  const parsed = schema.safeParse(value, {
    // The input of each issue tells a missing field (undefined) from a wrong one.
    reportInput: true,
    error: (issue) => {
      const shape =
        issue.code === 'unrecognized_keys'
          ? (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape
          : undefined;
      if (shape) known.set(JSON.stringify(issue.path ?? []), Object.keys(shape));
      return undefined;
    },
  });
  if (parsed.success) return { success: true, data: parsed.data };
  const read = parsed.error.issues.flatMap((issue): ReadIssue[] => {
    const path = issue.path as (string | number)[];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: [...path, key],
        issue,
        missing: false,
        unknown: { key, suggestion: nearestName(key, known.get(JSON.stringify(path)) ?? []) },
      }));
    }
    const missing =
      (issue.code === 'invalid_type' || issue.code === 'invalid_union') &&
      'input' in issue &&
      issue.input === undefined &&
      path.length > 0;
    return [{ path, issue, missing }];
  });
  const suggested = new Set(
    read.flatMap((r) =>
      r.unknown?.suggestion === undefined ? [] : [fieldPath([...r.path.slice(0, -1), r.unknown.suggestion])],
    ),
  );
  return { success: false, issues: read.filter((r) => !(r.missing && suggested.has(fieldPath(r.path)))) };
}

/** `tasks[3].schedule.cron`; the empty path is `''`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}
