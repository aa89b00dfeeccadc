import { PunctualApiError, type PunctualErrorCode } from '@punctual/client';
import type { ErrorDetail, ErrorEnvelope } from '@punctual/contract';
import { MASK } from './format.js';
import { ApiUnreachableError, type CliErrorCode, EXIT, TaskFileError, UsageError } from './errors.js';
import type { FileOrigins, TaskOrigin } from './task-file.js';

/** The API's error envelope, its code the API's or one of the command line's own. */
export interface ReportedEnvelope {
  error: Omit<ErrorEnvelope['error'], 'code'> & { code: PunctualErrorCode | CliErrorCode };
}

export interface ErrorReport {
  exitCode: number;
  /** One line per problem, for stderr. */
  lines: string[];
  /** The error as the API's envelope, for `--output json`. */
  envelope: ReportedEnvelope;
}

type ReportContext = { baseUrl?: string; hasKey: boolean; origins?: FileOrigins; secrets: string[] };
type Described = { exitCode: number; code: ReportedEnvelope['error']['code']; lines: string[]; details: ErrorDetail[] };

/** Secrets shorter than this are not masked in messages: they would hide ordinary words, and are no secret. */
const MASKED_MIN_LENGTH = 4;

/**
 * What a failed command says: one clear line per problem, API errors about a task or calendar of a
 * file named by the file, line and item, and no value from the environment.
 */
export function reportError(error: unknown, context: ReportContext): ErrorReport {
  const report = describe(error, context);
  const mask = (text: string) =>
    context.secrets
      .filter((s) => s.length >= MASKED_MIN_LENGTH)
      .sort((a, b) => b.length - a.length)
      .reduce((t, secret) => t.split(secret).join(MASK), text);
  const lines = report.lines.map((line) => `error: ${mask(line)}`);
  const envelope: ReportedEnvelope = {
    error: {
      code: report.code,
      message: mask(report.lines.join('; ')),
      details: report.details.map((d) => ({ field: d.field, message: mask(d.message) })),
    },
  };
  return { exitCode: report.exitCode, lines, envelope };
}

function describe(error: unknown, context: ReportContext): Described {
  if (error instanceof TaskFileError)
    return { exitCode: EXIT.error, code: 'invalid_file', lines: error.problems, details: [] };
  if (error instanceof UsageError) return { exitCode: EXIT.usage, code: 'usage', lines: [error.message], details: [] };
  if (error instanceof PunctualApiError) return describeApiError(error, context);
  // The request's timeout (AbortSignal.timeout) aborts it, or the reading of its answer, with this DOMException.
  if (error instanceof DOMException && error.code === DOMException.TIMEOUT_ERR)
    return {
      exitCode: EXIT.error,
      code: 'timeout',
      lines: [`the Punctual API at ${context.baseUrl} did not answer in time`],
      details: [],
    };
  if (error instanceof ApiUnreachableError) {
    return {
      exitCode: EXIT.error,
      code: 'unreachable',
      lines: [
        `cannot reach the Punctual API at ${context.baseUrl} (${error.reason}): is it running, and is PUNCTUAL_URL right?`,
      ],
      details: [],
    };
  }
  return {
    exitCode: EXIT.error,
    code: 'error',
    lines: [error instanceof Error ? error.message : String(error)],
    details: [],
  };
}

/** An error answer of the API, said by its code: a refused key, a missing role, or the API's own words about the file's items. */
function describeApiError(error: PunctualApiError, context: ReportContext): Described {
  const said = (lines: string[]): Described => ({
    exitCode: EXIT.error,
    code: error.code,
    lines,
    details: error.details,
  });
  switch (error.code) {
    case 'unauthenticated':
      return said([
        context.hasKey
          ? `the API refused the key in PUNCTUAL_API_KEY (${error.status} ${error.code}): ${error.message}`
          : 'the API wants a key: set PUNCTUAL_API_KEY',
      ]);
    case 'forbidden':
      return said([
        `the key in PUNCTUAL_API_KEY lacks the role for this (${error.status} ${error.code}): ${error.message}`,
      ]);
    default: {
      const aboutItems = context.origins
        ? error.details.map((d) => itemLine(d, context.origins!)).filter((l): l is string => l !== null)
        : [];
      return said(aboutItems.length ? aboutItems : [`${error.message} (${error.status} ${error.code})`]);
    }
  }
}

/**
 * `tasks[3].schedule.cron` → `tasks.yaml:12: task "nightly": schedule.cron: …` (and `calendars[0].dates[2]`
 * → `tasks.yaml:40: calendar "us-holidays": dates[2]: …`); null when the detail is about no item of the file.
 */
export function itemLine(detail: { field: string; message: string }, origins: FileOrigins): string | null {
  const match = /^(tasks|calendars)\[(\d+)\](?:\.(.*))?$/.exec(detail.field);
  if (!match) return null;
  const [, list, index, path] = match as unknown as [string, 'tasks' | 'calendars', string, string | undefined];
  const origin: TaskOrigin | undefined = origins[list][Number(index)];
  if (!origin) return null;
  const kind = list === 'tasks' ? 'task' : 'calendar';
  const field = path ?? 'name';
  // The line of the field the API names (`schedule.exclude[0]`), not the item's first line.
  const line = path && origin.lineOf ? origin.lineOf(fieldSegments(path)) : origin.line;
  const where = `${origin.file}:${line}: ${kind} "${origin.name}"`;
  // The API's messages are whole sentences: they start with what the detail is about — its field
  // (`tasks[3].schedule.cron: schedule.cron …`) or the item (`task "nightly" …`). The line names
  // each once, so those known words (the detail's own field, the file's item) are not repeated.
  const item = `${list}[${index}].`;
  let message = detail.message.startsWith(item) ? detail.message.slice(item.length) : detail.message;
  const about = `${kind} "${origin.name}" `;
  if (message.startsWith(about)) return `${where}: ${message.slice(about.length)}`;
  while (message.startsWith(field)) message = message.slice(field.length).replace(/^:?\s*/, '');
  return `${where}: ${field}: ${message}`;
}

/** `schedule.exclude[0]` → `['schedule', 'exclude', 0]`. */
function fieldSegments(path: string): (string | number)[] {
  return path.split('.').flatMap((part) => {
    const [key, ...indexes] = part.split('[');
    return [...(key ? [key] : []), ...indexes.map((i) => Number(i.replace(']', '')))];
  });
}
