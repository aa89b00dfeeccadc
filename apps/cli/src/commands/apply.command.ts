import { PunctualApiError } from '@punctual/client';
import type { FieldChange, TaskApplyResponse } from '@punctual/contract';
import type { Command } from 'commander';
import { type CliRun, print } from '../context.js';
import { EXIT, TaskFileError, UsageError } from '../errors.js';
import { itemLine } from '../report-error.js';
import { changesAnything, diffText } from '../format.js';
import { SecretsFile } from '../secrets-file.js';
import { readTaskFile, type TaskFile } from '../task-file.js';

interface ApplyOptions {
  file: string;
  prune?: boolean;
  dryRun?: boolean;
  secretsFile?: string;
}

/** What `diff --help` says after its options: each kind of line, where warnings go, the exit codes. */
const DIFF_HELP = `
Each change is one line (a calendar's says "calendar NAME"):
  + create NAME          the file declares it, the API does not have it
  ~ update NAME: FIELDS  the fields that differ, old → new (secret values as •••)
  - delete NAME          with --prune: the file's managedBy manages it, the file
                         no longer declares it
then a summary. Without --prune, what --prune would delete is named after it
(with -o json: "prunable": { "tasks": [...], "calendars": [...] }).
Warnings (a handler no live worker offers) go to stderr, as apply's do.

Exit codes: 0 nothing would change, 1 error, 2 bad usage, 3 something would change.`;

/** What `--prune` would delete and a diff without it does not: the file's managedBy manages them, the file does not declare them. */
interface Prunable {
  tasks: string[];
  calendars: string[];
}

/** `punctual diff -f FILE` and `punctual apply -f FILE`: tasks (and their calendars) as code (DESIGN §12). */
export function applyCommands(program: Command, run: CliRun): void {
  program
    .command('diff')
    .description('show what apply would change in the tasks and calendars of a file, and change nothing')
    .requiredOption('-f, --file <file>', 'a YAML or JSON task file')
    .option('--prune', 'also show the deletes of apply --prune')
    .addHelpText('after', DIFF_HELP)
    .action(async (options: ApplyOptions, command: Command) => {
      const prune = options.prune ?? false;
      const { result, file } = await applyFile(run, options.file, { prune, dryRun: true });
      const prunable = prune ? undefined : await prunableOf(run, result.managedBy, file);
      const notes = prunable
        ? [...prunable.calendars.map((c) => `calendar ${c}`), ...prunable.tasks].map(
            (name) => `${name} would be deleted with --prune (not in the file)`,
          )
        : [];
      print(run, command, [diffText(result, 'plan'), ...notes].join('\n'), prunable ? { ...result, prunable } : result);
      for (const warning of result.warnings) run.io.stderr(`warning: ${warning}\n`);
      if (changesAnything(result)) run.exitCode = EXIT.changes;
    });

  program
    .command('apply')
    .description(
      'make the tasks (and, when it has a calendars key, the calendars) the file manages what it declares, in one transaction',
    )
    .requiredOption('-f, --file <file>', 'a YAML or JSON task file')
    .option(
      '--prune',
      "also delete the tasks (and calendars, when the file has a calendars key) the file's managedBy manages that it no longer declares",
    )
    .option('--dry-run', 'show what would change and change nothing')
    .option(
      '--secrets-file <file>',
      'add the signing secret of each task created to this JSON file (mode 600), { "<task>": "<secret>" }; never printed',
    )
    .action(async (options: ApplyOptions, command: Command) => {
      const dryRun = options.dryRun ?? false;
      const secrets = options.secretsFile === undefined ? undefined : new SecretsFile(options.secretsFile);
      const { result } = await applyFile(run, options.file, { prune: options.prune ?? false, dryRun });
      secrets?.add(result.items);
      const shown = { ...result, items: result.items.map(({ secret: _secret, ...item }) => item) };
      print(
        run,
        command,
        `${diffText(shown, dryRun ? 'plan' : 'apply')}${dryRun ? '\n(dry run: nothing was changed)' : ''}`,
        shown,
      );
      for (const warning of result.warnings) run.io.stderr(`warning: ${warning}\n`);
    });
}

/** Reads the file, sends it to the API in one call and answers what changed, secret values masked. */
async function applyFile(
  run: CliRun,
  path: string,
  options: { prune: boolean; dryRun: boolean },
): Promise<{ result: TaskApplyResponse; file: TaskFile }> {
  let file: TaskFile;
  try {
    file = readTaskFile(path, run.io.env);
  } catch (error) {
    throw await withApiProblems(run, error);
  }
  useNamespaceOf(run, file);
  run.secrets.push(...file.secretValues);
  run.origins = { tasks: file.origins, calendars: file.calendarOrigins };
  // Without a `calendars` key the file says nothing about calendars: they are left as they are (and never pruned).
  const calendars = file.calendars === undefined ? {} : { calendars: file.calendars };
  const result = await run.client().tasks.apply({
    managedBy: file.managedBy,
    tasks: file.tasks,
    ...calendars,
    prune: options.prune,
    dryRun: options.dryRun,
  });
  return { result: maskFromEnvironment(result, file), file };
}

/**
 * A file its own checks refused: the items they passed are shown to the API too (a dry run, no
 * prune), so that what only the API can judge — a cron field out of range, an unknown calendar —
 * is said in the same round, each at its field's own line, in the order of the file's lines. The
 * error as it was when the API cannot be asked or finds nothing more.
 */
async function withApiProblems(run: CliRun, error: unknown): Promise<unknown> {
  if (!(error instanceof TaskFileError) || error.valid === undefined) return error;
  const valid = error.valid as TaskFile;
  if (valid.tasks.length === 0 && !valid.calendars?.length) return error;
  useNamespaceOf(run, valid);
  run.secrets.push(...valid.secretValues);
  const calendars = valid.calendars?.length ? { calendars: valid.calendars } : {};
  const more = await run
    .client()
    .tasks.apply({ managedBy: valid.managedBy, tasks: valid.tasks, ...calendars, prune: false, dryRun: true })
    .then(
      () => [],
      (refused: unknown) =>
        refused instanceof PunctualApiError
          ? refused.details
              .map((d) => itemLine(d, { tasks: valid.origins, calendars: valid.calendarOrigins }))
              .filter((l): l is string => l !== null)
          : [],
    );
  if (more.length === 0) return error;
  const lineOf = (problem: string) => Number(/^[^:]*:(\d+):/.exec(problem)?.[1] ?? 0);
  return new TaskFileError([...error.problems, ...more].sort((a, b) => lineOf(a) - lineOf(b)));
}

/**
 * What apply --prune would delete and the file does not declare: the tasks `managedBy` manages,
 * and its calendars when the file has a calendars key (without one, calendars are never pruned).
 */
async function prunableOf(run: CliRun, managedBy: string, file: TaskFile): Promise<Prunable> {
  const client = run.client();
  const declared = new Set(file.tasks.map((t) => t.name));
  const tasks = (await client.tasks.list({ managedBy }).all()).map((t) => t.name).filter((name) => !declared.has(name));
  if (file.calendars === undefined) return { tasks, calendars: [] };
  const declaredCalendars = new Set(file.calendars.map((c) => c.name));
  const calendars = (await client.calendars.list())
    .filter((c) => c.managedBy === managedBy && !declaredCalendars.has(c.name))
    .map((c) => c.name);
  return { tasks, calendars };
}

/**
 * The API masks payload fields named in `secretFields`; a value the file took from the
 * environment is a secret too, wherever it is (in a task or a calendar): its changes are shown as •••.
 */
function maskFromEnvironment(result: TaskApplyResponse, file: TaskFile): TaskApplyResponse {
  return {
    ...result,
    items: masked(result.items, file.secretPaths),
    calendars: masked(result.calendars ?? [], file.calendarSecretPaths),
  };
}

function masked<T extends { name: string; changes: FieldChange[] }>(
  items: T[],
  secretPaths: Map<string, string[]>,
): T[] {
  return items.map((item) => {
    const paths = secretPaths.get(item.name) ?? [];
    const related = (field: string) =>
      paths.some(
        (p) => p === field || p.startsWith(`${field}.`) || p.startsWith(`${field}[`) || field.startsWith(`${p}.`),
      );
    const changes = item.changes.map((change) =>
      change.secret || !related(change.field)
        ? change
        : {
            field: change.field,
            ...('before' in change && { before: null }),
            ...('after' in change && { after: null }),
            secret: true,
          },
    );
    return { ...item, changes };
  });
}

/**
 * A file's `namespace:` is where its tasks and calendars go (and the only one `--prune` reaches):
 * every call of the run acts in it. `--namespace` naming another is a usage error, not a choice.
 */
function useNamespaceOf(run: CliRun, file: TaskFile): void {
  if (file.namespace === undefined) return;
  if (run.namespaceGiven && run.namespace !== file.namespace)
    throw new UsageError(`--namespace ${run.namespace} names another namespace than the file's (${file.namespace})`);
  run.namespace = file.namespace;
}
