import { nearestName } from '@punctual/contract';
import type { z } from 'zod';

/** One problem of a value a schema refused: the path of the field and what to tell the user. */
export interface SchemaProblem {
  path: (string | number)[];
  text: string;
}

/** `schedule.cron`, `payload.items[2]`. */
export function dotted(path: readonly (string | number | symbol)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}

/**
 * Validates `value` by `schema`: its data, or one problem per issue in a user's words — a missing
 * field is `handler is required`, an unknown one `timezon: unknown field, did you mean "timezone"?`
 * (one problem per unknown field; a missing field such a suggestion names is not told twice), the
 * others `field: zod's message`.
 */
export function parseWithProblems<T>(schema: z.ZodType<T>, value: unknown): { data: T; problems?: undefined } | { data?: undefined; problems: SchemaProblem[] } {
  // The fields each object that met an unknown one knows, by its path: only the object that
  // refused a key (a union's branch, say) knows its shape, and zod shows it only to an error map.
  const known = new Map<string, string[]>();
  const parsed = schema.safeParse(value, {
    // The input of each issue tells a missing field (undefined) from a wrong one.
    reportInput: true,
    error: (issue) => {
      const shape = issue.code === 'unrecognized_keys' ? (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape : undefined;
      if (shape) known.set(JSON.stringify(issue.path ?? []), Object.keys(shape));
      return undefined;
    },
  });
  if (parsed.success) return { data: parsed.data };
  const problems = parsed.error.issues.flatMap((issue) => describeIssue(issue, known));
  // `handlr` for `handler` is one mistake: its "did you mean" says it, not also "handler is required".
  const suggested = new Set(problems.flatMap((p) => (p.suggestion === undefined ? [] : [dotted([...p.path.slice(0, -1), p.suggestion])])));
  return { problems: problems.filter((p) => !(p.missing && suggested.has(dotted(p.path)))).map(({ path, text }) => ({ path, text })) };
}

function describeIssue(issue: z.core.$ZodIssue, known: Map<string, string[]>): (SchemaProblem & { suggestion?: string; missing?: boolean })[] {
  const path = issue.path as (string | number)[];
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => {
      const suggestion = nearestName(key, known.get(JSON.stringify(path)) ?? []);
      return { path: [...path, key], text: `${dotted([...path, key])}: unknown field${suggestion ? `, did you mean "${suggestion}"?` : ''}`, suggestion };
    });
  }
  const missing = (issue.code === 'invalid_type' || issue.code === 'invalid_union') && 'input' in issue && issue.input === undefined && path.length > 0;
  if (missing) return [{ path, text: `${dotted(path)} is required`, missing }];
  return [{ path, text: `${dotted(path) || '(document)'}: ${issue.message}` }];
}
