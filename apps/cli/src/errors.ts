/** Exit codes of `punctual` (DESIGN §12). */
export const EXIT = Object.freeze({ ok: 0, error: 1, usage: 2, changes: 3 });

/** A task file that cannot be applied: one line per problem, each naming the file, line, task and field. */
export class TaskFileError extends Error {
  override readonly name = 'TaskFileError';
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

/** The command line or the environment asks for something impossible: exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
