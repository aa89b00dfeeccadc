import { PunctualClient } from '@punctual/client';
import type { Command } from 'commander';
import { ApiUnreachableError, UsageError } from './errors.js';
import type { FileOrigins } from './task-file.js';

/** Where the API is when `PUNCTUAL_URL` does not say. */
export const DEFAULT_URL = 'http://127.0.0.1:3000';
/** How long one request may take: an apply of a thousand tasks takes seconds, a hung server forever. */
const REQUEST_TIMEOUT_MS = 120_000;

/** What the CLI reads and writes: the process's streams and environment, or a test's. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

/** The state of one run of the CLI: its output format, exit code and the secrets to keep out of its output. */
export class CliRun {
  exitCode = 0;
  /** Values from the environment that a message must not show. */
  readonly secrets: string[] = [];
  /** Where the tasks and calendars sent came from, so that the API's errors about them can name the file and line. */
  origins?: FileOrigins;

  /** The namespace the commands act in: `--namespace`, else `PUNCTUAL_NAMESPACE`, else the server's default. */
  namespace?: string;
  /** Whether `--namespace` named it (a file's `namespace:` may not then say another). */
  namespaceGiven = false;

  constructor(readonly io: CliIo) {
    this.namespace = io.env.PUNCTUAL_NAMESPACE || undefined;
  }

  /** `PUNCTUAL_URL` (default {@link DEFAULT_URL}), checked once. */
  get baseUrl(): string {
    const url = this.io.env.PUNCTUAL_URL || DEFAULT_URL;
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol))
      throw new UsageError(`PUNCTUAL_URL must be an http(s) URL such as ${DEFAULT_URL}, not "${url}"`);
    return url;
  }

  get hasKey(): boolean {
    return Boolean(this.io.env.PUNCTUAL_API_KEY);
  }

  client(): PunctualClient {
    return new PunctualClient({
      baseUrl: this.baseUrl,
      apiKey: this.io.env.PUNCTUAL_API_KEY || undefined,
      namespace: this.namespace,
      fetch: async (input, init) => {
        try {
          return await fetch(input, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        } catch (error) {
          // A request that got no response is a TypeError (the fetch standard's network error); a timeout is the signal's DOMException.
          throw error instanceof TypeError ? new ApiUnreachableError(error) : error;
        }
      },
    });
  }
}

/** The output format a command was asked for (`--output`, a global option). */
export function isJson(command: Command): boolean {
  return command.optsWithGlobals<{ output?: string }>().output === 'json';
}

/** Prints a command's result: `human` as text, or `data` as exactly one JSON document. */
export function print(run: CliRun, command: Command, human: string, data: unknown): void {
  run.io.stdout(isJson(command) ? `${JSON.stringify(data, null, 2)}\n` : human ? `${human}\n` : '');
}
