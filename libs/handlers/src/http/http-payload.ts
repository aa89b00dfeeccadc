import { validateHeaderName, validateHeaderValue } from 'node:http';
import { z } from 'zod';
import { UnrecoverableError } from '../task-handler.js';
import { RESERVED_HEADERS } from './signed-request.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

function isHttpUrl(text: string): boolean {
  return URL.canParse(text) && ['http:', 'https:'].includes(new URL(text).protocol);
}

// Validation messages never quote a value: header values and bodies may be secrets (secretFields).
const headers = z.record(z.string(), z.string()).superRefine((map, ctx) => {
  for (const [name, value] of Object.entries(map)) {
    const problem = RESERVED_HEADERS.has(name.toLowerCase())
      ? 'is set by punctual itself'
      : !valid(() => validateHeaderName(name))
        ? 'is not a valid header name'
        : !valid(() => validateHeaderValue(name, value))
          ? 'holds characters a header value cannot'
          : null;
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
  }
});

const schema = z
  .strictObject({
    url: z.string().refine(isHttpUrl, 'must be an absolute http: or https: URL'),
    method: z
      .string()
      .transform((m) => m.toUpperCase())
      .pipe(z.enum(METHODS, { error: `must be one of ${METHODS.join(', ')}` }))
      .default('POST'),
    headers: headers.optional(),
    body: z.unknown().optional(),
    timeoutMs: z.number().int().positive().max(86_400_000).optional(),
  })
  .refine((p) => p.body === undefined || (p.method !== 'GET' && p.method !== 'HEAD'), {
    path: ['body'],
    message: 'a GET or HEAD request has no body',
  });

/** The `http` handler's payload, validated and with defaults applied. */
export type HttpPayload = z.output<typeof schema>;

/**
 * Validates an `http` payload: `{ url, method = 'POST', headers?, body?, timeoutMs? }`. A bad one
 * can never succeed, so it is an {@link UnrecoverableError} (the execution goes to `dead` at once).
 */
export function parseHttpPayload(payload: unknown): HttpPayload {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) =>
    issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message,
  );
  throw new UnrecoverableError(`invalid http payload: ${problems.join('; ')}`);
}

function valid(check: () => void): boolean {
  try {
    check();
    return true;
  } catch {
    return false; // the answer asked for: the schema's issue names the field
  }
}
