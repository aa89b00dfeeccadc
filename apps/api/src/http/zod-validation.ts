import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { nearestName } from '@punctual/contract';
import type { z } from 'zod';
import { ApiError, type ErrorDetail } from './api-error.js';

/**
 * Validates a body or a query against its contract schema and hands the parsed value on. Errors
 * name each field by its path (`tasks[3].schedule.cron`), say when a required one is missing and
 * suggest the nearest known name for an unknown one. A wrong JSON type, a missing or an unknown
 * field is malformed (400); a well-formed value with an impossible meaning is 422.
 */
export class ZodValidationPipe implements PipeTransform {
  constructor(private readonly schema: z.ZodType) {}

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const input = metadata.type === 'query' ? listsAsArrays(this.schema, value) : value;
    const known: KnownFields = new Map();
    // The input of each issue tells a missing field (undefined) from a wrong one.
    const parsed = this.schema.safeParse(input === undefined && metadata.type === 'body' ? {} : input, { reportInput: true, error: recordKnownFields(known) });
    if (parsed.success) return parsed.data;
    throw validationError(parsed.error.issues, [], known);
  }
}

/** The fields an object of the schema knows, by the path of the object (as JSON): for "did you mean". */
export type KnownFields = Map<string, string[]>;

/**
 * An error map that leaves every message as it is and notes the known fields of each object that
 * met an unknown one. Only the object that refused a key knows its own shape (a union's branch,
 * say), and zod hands it over only here, before the issue is final.
 */
function recordKnownFields(known: KnownFields): z.core.$ZodErrorMap {
  return (issue) => {
    const shape = issue.code === 'unrecognized_keys' ? (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape : undefined;
    if (shape) known.set(JSON.stringify(issue.path ?? []), Object.keys(shape));
    return undefined;
  };
}

/** The API error for a failed parse. */
export function validationError(issues: z.core.$ZodIssue[], prefix: (string | number)[] = [], known: KnownFields = new Map()): ApiError {
  const described = issues.flatMap((issue) => describe(issue, prefix, known));
  // `handlr` for `handler` is one mistake: its "did you mean" says it, not also "handler is required".
  const suggested = new Set(described.flatMap((d) => (d.suggested === undefined ? [] : [d.suggested])));
  const details = described.filter((d) => !(d.missing && suggested.has(d.field)));
  const malformed = details.some((d) => d.malformed);
  return new ApiError(
    malformed ? 400 : 422,
    malformed ? 'invalid_request' : 'validation_failed',
    details.map((d) => d.message).join('; ') || 'the request is invalid',
    details.map(({ field, message }) => ({ field, message })),
  );
}

/** `tasks[3].schedule.cron`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('') || '(body)';
}

/** A detail, whether it makes the request malformed, and for an unknown field the path of the known one it suggests. */
type Described = ErrorDetail & { malformed: boolean; missing?: boolean; suggested?: string };

function describe(issue: z.core.$ZodIssue, prefix: (string | number)[], known: KnownFields): Described[] {
  const path = [...prefix, ...(issue.path as (string | number)[])];
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => {
      const field = fieldPath([...path, key]);
      const nearest = nearestName(key, known.get(JSON.stringify(issue.path)) ?? []);
      const message = `${field} is not a known field${nearest ? `, did you mean "${nearest}"?` : ''}`;
      return { field, message, malformed: true, suggested: nearest === undefined ? undefined : fieldPath([...path, nearest]) };
    });
  }
  const field = fieldPath(path);
  const missing = isMissing(issue);
  return [{ field, message: `${field} ${missing ? 'is required' : explain(issue)}`, malformed: isMalformed(issue), missing }];
}

/** A required field left out: its value failed on its type (of every branch, for a union) and was not there. */
function isMissing(issue: z.core.$ZodIssue): boolean {
  return (issue.code === 'invalid_type' || issue.code === 'invalid_union') && 'input' in issue && issue.input === undefined;
}

function isMalformed(issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'invalid_type') return true;
  // A union (string or milliseconds) fails on shape only when every branch failed on its type.
  if (issue.code === 'invalid_union') return issue.errors.length > 0 && issue.errors.every((branch) => branch.some((i) => i.code === 'invalid_type'));
  return false;
}

function explain(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${issue.expected === 'record' ? 'an object' : issue.expected === 'int' ? 'a whole number' : `${article(issue.expected)} ${issue.expected}`}`;
    case 'invalid_union':
      return 'must be a string or a whole number';
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_big':
      return issue.origin === 'string' ? `must be at most ${issue.maximum} characters` : issue.origin === 'array' ? `must have at most ${issue.maximum} items` : `must be at most ${issue.maximum}`;
    case 'too_small':
      return issue.origin === 'string' ? (issue.minimum === 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`) : issue.origin === 'array' ? `must have at least ${issue.minimum} items` : `must be at least ${issue.minimum}`;
    case 'invalid_key':
      return issue.issues[0]?.message ?? 'has an invalid key';
    default:
      return issue.message;
  }
}

const article = (word: string) => (/^[aeiou]/.test(word) ? 'an' : 'a');

/** A query parameter given once arrives as a string; where the schema wants a list, make it one. */
function listsAsArrays(schema: z.ZodType, value: unknown): unknown {
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
  if (!shape || value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [key, field] of Object.entries(shape)) {
    if (typeof out[key] === 'string' && unwrap(field)._zod.def.type === 'array') out[key] = [out[key]];
  }
  return out;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema as z.ZodType & { _zod: { def: { type: string; innerType?: z.ZodType } } };
  while (current._zod.def.innerType) current = current._zod.def.innerType as typeof current;
  return current;
}
