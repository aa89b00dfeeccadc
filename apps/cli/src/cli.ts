import { Command, CommanderError, Option } from 'commander';
import { NAMESPACE_NAME_PATTERN } from '@punctual/contract';
import { applyCommands } from './commands/apply.command.js';
import { calendarsCommand } from './commands/calendars.command.js';
import { executionsCommand } from './commands/executions.command.js';
import { explainCommand } from './commands/explain.command.js';
import { previewCommand } from './commands/preview.command.js';
import { runsCommand } from './commands/runs.command.js';
import { tasksCommand } from './commands/tasks.command.js';
import { CliRun, type CliIo, DEFAULT_URL } from './context.js';
import { EXIT, UsageError } from './errors.js';
import { reportError } from './report-error.js';

/**
 * Runs `punctual` with `argv` (the arguments after the program name) and answers its exit code:
 * 0 success, 1 error, 2 bad usage, 3 `diff` found changes.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const run = new CliRun(io);
  const program = buildProgram(run);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return run.exitCode;
  } catch (error) {
    if (error instanceof CommanderError)
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? EXIT.ok : EXIT.usage;
    let baseUrl: string | undefined;
    try {
      baseUrl = run.baseUrl;
    } catch {
      baseUrl = io.env.PUNCTUAL_URL;
    }
    const report = reportError(error, { baseUrl, hasKey: run.hasKey, origins: run.origins, secrets: run.secrets });
    if (program.opts<{ output?: string }>().output === 'json')
      io.stdout(`${JSON.stringify(report.envelope, null, 2)}\n`);
    io.stderr(`${report.lines.join('\n')}\n`);
    return report.exitCode;
  }
}

function buildProgram(run: CliRun): Command {
  const program = new Command('punctual')
    .description(
      "Punctual's command line: tasks, calendars, runs (to retry or cancel), schedule previews and tasks as code.\n" +
        `Configured by PUNCTUAL_URL (default ${DEFAULT_URL}), PUNCTUAL_API_KEY and PUNCTUAL_NAMESPACE.`,
    )
    .option('-n, --namespace <name>', 'the namespace to act in (default: PUNCTUAL_NAMESPACE, else "default")')
    .hook('preAction', (command) => {
      const { namespace } = command.opts<{ namespace?: string }>();
      if (namespace !== undefined) {
        if (!NAMESPACE_NAME_PATTERN.test(namespace))
          throw new UsageError(`--namespace must match ${NAMESPACE_NAME_PATTERN.source}, not "${namespace}"`);
        run.namespace = namespace;
        run.namespaceGiven = true;
      }
    })
    .addOption(
      new Option('-o, --output <format>', 'table for people, json for programs (one JSON document)')
        .choices(['table', 'json'])
        .default('table'),
    )
    .exitOverride()
    // Each command's --help also shows --output, which every command takes.
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ writeOut: (text) => run.io.stdout(text), writeErr: (text) => run.io.stderr(text) })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText(
      'after',
      '\nExit codes: 0 success (diff: no changes), 1 error, 2 bad usage, 3 diff found changes or explain found a slot that did not succeed.',
    );
  tasksCommand(program, run);
  calendarsCommand(program, run);
  runsCommand(program, run);
  executionsCommand(program, run);
  explainCommand(program, run);
  previewCommand(program, run);
  applyCommands(program, run);
  return program;
}
