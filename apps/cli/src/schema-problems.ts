import { fieldPath, parseExplained } from '@punctual/contract';
import type { z } from 'zod';

/** One problem of a value a schema refused: the path of the field and what to tell the user. */
export interface SchemaProblem {
  path: (string | number)[];
  text: string;
}

/**
 * Validates `value` by `schema`: its data, or one problem per issue in a user's words (read by the
 * contract's `parseExplained`, as the API's errors are) — `handler is required`,
 * `timezon: unknown field, did you mean "timezone"?`, else `field: zod's message`.
 */
export function parseWithProblems<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { data: T; problems?: undefined } | { data?: undefined; problems: SchemaProblem[] } {
  const parsed = parseExplained(schema, value);
  if (parsed.success) return { data: parsed.data };
  return {
    problems: parsed.issues.map(({ path, issue, missing, unknown }) => {
      const field = fieldPath(path);
      if (unknown)
        return {
          path,
          text: `${field}: unknown field${unknown.suggestion ? `, did you mean "${unknown.suggestion}"?` : ''}`,
        };
      return { path, text: missing ? `${field} is required` : `${field || '(document)'}: ${issue.message}` };
    }),
  };
}
