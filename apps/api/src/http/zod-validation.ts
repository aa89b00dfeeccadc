import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import {
  type ErrorCode,
  fieldPath,
  isErrorCode,
  MISSING_BODY,
  parseExplained,
  type ReadIssue,
} from '@punctual/contract';
import type { z } from 'zod';
import { ApiError } from './api-error.js';

/**
 * Validates a body or a query against its contract schema and hands the parsed value on. Errors
 * name each field by its path (`tasks[3].schedule.cron`), say when a required one is missing and
 * suggest the nearest known name for an unknown one. A wrong JSON type, a missing or an unknown
 * field is malformed (400); a well-formed value with an impossible meaning is 422.
 */
export class ZodValidationPipe implements PipeTransform {
  /** `skip`: query parameters read elsewhere, left out before the schema sees the query. */
  constructor(
    private readonly schema: z.ZodType,
    private readonly skip: readonly string[] = [],
  ) {}

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const input = metadata.type === 'query' ? listsAsArrays(this.schema, without(value, this.skip)) : value;
    const parsed = parseExplained(this.schema, input === undefined && metadata.type === 'body' ? MISSING_BODY : input);
    if (parsed.success) return parsed.data;
    throw validationError(parsed.issues);
  }
}

/**
 * The API error for a failed parse: 400 when a field is missing, unknown or of the wrong type, else
 * 422 — with the code the contract's refinements name (`params: { code }`) when every issue names
 * the same one, else `validation_failed`.
 */
function validationError(issues: ReadIssue[]): ApiError {
  const details = issues.map((read) => {
    const field = fieldPath(read.path) || '(body)';
    const message = read.unknown
      ? `${field} is not a known field${read.unknown.suggestion ? `, did you mean "${read.unknown.suggestion}"?` : ''}`
      : `${field} ${read.missing ? 'is required' : explain(read.issue)}`;
    return { field, message, malformed: read.unknown !== undefined || isMalformed(read.issue) };
  });
  const malformed = details.some((d) => d.malformed);
  const named = new Set(issues.map((read) => namedCode(read.issue)));
  return new ApiError(
    malformed ? 400 : 422,
    malformed ? 'invalid_request' : named.size === 1 ? ([...named][0] ?? 'validation_failed') : 'validation_failed',
    details.map((d) => d.message).join('; ') || 'the request is invalid',
    details.map(({ field, message }) => ({ field, message })),
  );
}

/** The error code a contract refinement names for its issue (`refine(check, { params: { code } })`). */
function namedCode(issue: z.core.$ZodIssue): ErrorCode | undefined {
  const code = issue.code === 'custom' ? issue.params?.code : undefined;
  return isErrorCode(code) ? code : undefined;
}

function isMalformed(issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'invalid_type') return true;
  // A union (string or milliseconds) fails on shape only when every branch failed on its type.
  if (issue.code === 'invalid_union')
    return issue.errors.length > 0 && issue.errors.every((branch) => branch.some((i) => i.code === 'invalid_type'));
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
      return issue.origin === 'string'
        ? `must be at most ${issue.maximum} characters`
        : issue.origin === 'array'
          ? `must have at most ${issue.maximum} items`
          : `must be at most ${issue.maximum}`;
    case 'too_small':
      return issue.origin === 'string'
        ? issue.minimum === 1
          ? 'must not be empty'
          : `must be at least ${issue.minimum} characters`
        : issue.origin === 'array'
          ? `must have at least ${issue.minimum} items`
          : `must be at least ${issue.minimum}`;
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

function without(value: unknown, names: readonly string[]): unknown {
  if (names.length === 0 || typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([name]) => !names.includes(name)));
}
