import type { ExecutionDetail } from '@punctual/contract';
import type { Command } from 'commander';
import { type CliRun, print } from '../context.js';
import { inUtc, table } from '../format.js';

/**
 * `punctual executions get|retry|cancel <id>`: one execution — the whole of it, its error uncut
 * and its history — and an operator's actions on it, by the id `punctual runs` shows. Shaped as `tasks` and `calendars` are (a noun, then a verb), so that no
 * verb can be taken for a task's name.
 */
export function executionsCommand(program: Command, run: CliRun): void {
  const executions = program
    .command('executions')
    .description(
      'show one execution (its whole error and history), retry a dead one or cancel a pending or running one, by the id punctual runs shows',
    );

  executions
    .command('get')
    .description(
      'one execution: its slot, status, attempts, worker, times, the whole error, the result and every state change',
    )
    .argument('<id>', 'the execution, as punctual runs shows it')
    .action(async (id: string, _options: object, command: Command) => {
      const execution = await run.client().executions.get(id);
      print(run, command, executionText(execution), execution);
    });

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
    .description(
      'cancel a scheduled, queued, retrying or running execution; a running handler is told to stop (operator role)',
    )
    .argument('<id>', 'the execution, as punctual runs shows it')
    .action(async (id: string, _options: object, command: Command) => {
      const execution = await run.client().executions.cancel(id);
      print(run, command, `cancelled execution ${execution.id} of ${execution.task}`, execution);
    });
}

/** An instant in UTC, or `-`. */
const at = (iso: string | null) => (iso ? inUtc(iso) : '-');

/** One execution as `punctual executions get` prints it: its fields, then its history. */
function executionText(e: ExecutionDetail): string {
  const rows: [string, string][] = [
    ['id', e.id],
    ['task', `${e.task}${e.taskDeleted ? ' (deleted since)' : ''}`],
    ['slot', at(e.scheduledFor)],
    ['fire time', at(e.fireAt)],
    ['trigger', e.trigger],
    ['status', e.skipReason ? `${e.status} (${e.skipReason})` : e.status],
    ['attempt', String(e.attempt)],
    ['worker', e.workerId ?? '-'],
    ['queued', at(e.queuedAt)],
    ['started', at(e.startedAt)],
    ['finished', at(e.finishedAt)],
    ['duration', e.durationMs === null ? '-' : `${e.durationMs}ms`],
    ...(e.nextAttemptAt ? [['next attempt', at(e.nextAttemptAt)] as [string, string]] : []),
    ['error', e.error ?? '-'],
    ['result', e.result === null || e.result === undefined ? '-' : JSON.stringify(e.result)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  // The error whole, every line of it indented under its label.
  const lines = rows.map(([k, v]) =>
    `${`${k}:`.padEnd(width)} ${v.split('\n').join(`\n${' '.repeat(width + 1)}`)}`.trimEnd(),
  );
  const history = e.events.map((ev) => [
    inUtc(ev.at),
    `${ev.from ?? '-'} → ${ev.to}`,
    ev.workerId ?? '-',
    ev.detail === null || ev.detail === undefined ? '' : JSON.stringify(ev.detail),
  ]);
  lines.push('', history.length ? table(['AT', 'CHANGE', 'WORKER', 'DETAIL'], history) : 'no state changes recorded');
  return lines.join('\n');
}
