/** Exit codes of `punctual` (DESIGN §12). */
export const EXIT = Object.freeze({ ok: 0, error: 1, usage: 2, changes: 3 });

/**
 * The codes of the failures the command line meets on its own side (`--output json` prints them in
 * the API's envelope): a file it cannot read, bad usage, an API it cannot reach or that does not answer in time.
 */
export type CliErrorCode = 'invalid_file' | 'usage' | 'timeout' | 'unreachable' | 'error';

/** A task file that cannot be applied: one line per problem, each naming the file, line, task and field. */
export class TaskFileError extends Error {
  override readonly name = 'TaskFileError';
  /**
   * `problems`: one line each. `valid`: what of the file was read without a problem (absent when
   * the file could not be read at all), which the API may still judge in the same round.
   */
  constructor(
    readonly problems: string[],
    readonly valid?: unknown,
  ) {
    super(problems.join('\n'));
  }
}

/** The command line or the environment asks for something impossible: exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * `fetch` found no API to answer: its request failed before any response (the fetch standard's
 * network error, a `TypeError`). `reason` is node's code for it (`ECONNREFUSED`, `ENOTFOUND`,
 * `UND_ERR_SOCKET`…) or, without one, its own words (`bad port`).
 */
export class ApiUnreachableError extends Error {
  override readonly name = 'ApiUnreachableError';
  readonly reason: string;
  constructor(cause: TypeError) {
    super('the API did not answer', { cause });
    const detail = cause.cause as { code?: unknown; message?: unknown } | undefined;
    this.reason =
      typeof detail?.code === 'string'
        ? detail.code
        : typeof detail?.message === 'string'
          ? detail.message
          : 'no answer';
  }
}
