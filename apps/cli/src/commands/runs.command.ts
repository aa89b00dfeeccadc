import { PunctualApiError } from '@punctual/client';
import { EXECUTION_STATUSES, type Execution, type ExecutionStatus } from '@punctual/contract';
import { type Command, Option } from 'commander';
import { type CliRun, print } from '../context.js';
import { inUtc, inZone, isUtc, table } from '../format.js';
import { positiveInt } from './arguments.js';

/** How many runs `punctual runs` shows unless told. */
const RUNS_DEFAULT = 20;

/** `punctual runs <task>`: a task's recent executions, newest first, each with the id `punctual executions` takes. */
export function runsCommand(program: Command, run: CliRun): void {
  program
    .command('runs')
    .description(
      "a task's recent executions, newest first: id, slot in the task's zone and UTC, status (retry or cancel one with punctual executions)",
    )
    .argument('<task>', 'the task')
    .addOption(
      new Option('--status <status>', 'only executions in this status (dead: the dead letter)').choices(
        EXECUTION_STATUSES,
      ),
    )
    .option('--limit <n>', `at most this many (default ${RUNS_DEFAULT})`, positiveInt)
    .option('--wide', 'show each error whole (by default one line of at most 60 characters)')
    .action(
      async (name: string, options: { status?: ExecutionStatus; limit?: number; wide?: boolean }, command: Command) => {
        const client = run.client();
        // A deleted task's history is still listed under its name: its slots are shown in UTC.
        const task = await client.tasks.get(name).catch((error: unknown) => {
          if (error instanceof PunctualApiError && error.code === 'not_found') return null;
          throw error;
        });
        const limit = options.limit ?? RUNS_DEFAULT;
        const items: Execution[] = [];
        for await (const execution of client.tasks.executions(name, {
          status: options.status,
          limit: Math.min(limit, 500),
        })) {
          if (items.length >= limit) break;
          items.push(execution);
        }
        // A deleted task's zone is gone with it: its slots are shown in UTC alone.
        const zone = task === null ? 'UTC' : task.schedule.timezone;
        // A UTC task's slot in its zone is its slot in UTC: one column says it.
        const slots = (iso: string) => (isUtc(zone) ? [inUtc(iso)] : [inZone(iso, zone), inUtc(iso)]);
        const rows = items.map((e) => [
          e.id,
          ...slots(e.scheduledFor),
          e.trigger,
          e.skipReason ? `${e.status} (${e.skipReason})` : e.status,
          String(e.attempt),
          e.durationMs === null ? '-' : `${e.durationMs}ms`,
          options.wide ? (e.error ?? '-') : oneLine(e.error),
        ]);
        // A cut error says where to read it whole.
        const cut = !options.wide && items.some((e) => e.error !== null && e.error.replace(/\s+/g, ' ').length > 60);
        const more = cut
          ? '\nerrors cut to one line: --wide shows them whole, punctual executions get <id> one with its history'
          : '';
        const header = [
          'ID',
          ...(isUtc(zone) ? ['SLOT (UTC)'] : [`SLOT (${zone})`, 'SLOT (UTC)']),
          'TRIGGER',
          'STATUS',
          'ATTEMPT',
          'DURATION',
          'ERROR',
        ];
        const title = task ? '' : `${name} was deleted; its history:\n`;
        print(run, command, items.length ? `${title}${table(header, rows)}${more}` : `no runs of ${name} yet`, {
          items,
        });
      },
    );
}

/** An error on one line of at most 60 characters (`…` where it was cut), or `-`. */
function oneLine(text: string | null): string {
  if (!text) return '-';
  const line = text.replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
