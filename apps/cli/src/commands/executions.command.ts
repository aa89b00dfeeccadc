import type { Command } from 'commander';
import { type CliRun, print } from '../context.js';

/**
 * `punctual executions retry|cancel <id>`: an operator's actions on one execution, by the id
 * `punctual runs` shows. Shaped as `tasks` and `calendars` are (a noun, then a verb), so that no
 * verb can be taken for a task's name.
 */
export function executionsCommand(program: Command, run: CliRun): void {
  const executions = program.command('executions').description('retry a dead execution or cancel a pending or running one, by the id punctual runs shows');

  executions
    .command('retry')
    .description('replay a dead execution (the dead letter): a new attempt, now (operator role)')
    .argument('<id>', 'the execution, as punctual runs shows it')
    .action(async (id: string, _options: object, command: Command) => {
      const execution = await run.client().executions.retry(id);
      print(run, command, `retrying execution ${execution.id} of ${execution.task} (${execution.status})`, execution);
    });

  executions
    .command('cancel')
    .description('cancel a scheduled, queued, retrying or running execution; a running handler is told to stop (operator role)')
    .argument('<id>', 'the execution, as punctual runs shows it')
    .action(async (id: string, _options: object, command: Command) => {
      const execution = await run.client().executions.cancel(id);
      print(run, command, `cancelled execution ${execution.id} of ${execution.task}`, execution);
    });
}
