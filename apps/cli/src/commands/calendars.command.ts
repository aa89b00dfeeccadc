import type { Calendar } from '@punctual/contract';
import type { Command } from 'commander';
import { type CliRun, print } from '../context.js';
import { table } from '../format.js';

/** What ZONE says of a calendar without a zone: each task's own schedule zone. */
const TASKS_ZONE = "task's";

/** `punctual calendars ls|get`: the calendars of excluded days that tasks name in `schedule.exclude`. */
export function calendarsCommand(program: Command, run: CliRun): void {
  const calendars = program
    .command('calendars')
    .description("list and show calendars of excluded days (a task's schedule.exclude names them)");

  calendars
    .command('ls')
    .description(
      'list calendars by name: zone, how many dates and rules, how many tasks exclude them, who manages them',
    )
    .action(async (_options: object, command: Command) => {
      const items = await run.client().calendars.list();
      const rows = items.map((c) => [
        c.name,
        c.timezone ?? TASKS_ZONE,
        String(c.dates.length),
        String(c.rrules.length),
        String(c.tasks.length),
        c.managedBy ?? '-',
      ]);
      print(
        run,
        command,
        items.length ? table(['NAME', 'ZONE', 'DATES', 'RULES', 'TASKS', 'MANAGED BY'], rows) : 'no calendars',
        { items },
      );
    });

  calendars
    .command('get')
    .description('show a calendar: its zone, every excluded date and day rule, and the tasks that exclude it')
    .argument('<name>', 'the calendar')
    .action(async (name: string, _options: object, command: Command) => {
      const calendar = await run.client().calendars.get(name);
      print(run, command, detailText(calendar), calendar);
    });
}

function detailText(calendar: Calendar): string {
  const rows: [string, string][] = [
    ['name', calendar.name],
    ['description', calendar.description ?? '-'],
    ['zone', calendar.timezone ?? "each task's own schedule zone"],
    ['version', String(calendar.version)],
    ['managed by', calendar.managedBy ?? '-'],
  ];
  const lists: [string, string[]][] = [
    ['dates', calendar.dates],
    ['rules', calendar.rrules],
    ['excluded by', calendar.tasks],
  ];
  const width = Math.max(...[...rows, ...lists].map(([k]) => k.length)) + 1;
  const line = (key: string, value: string) => `${`${key}:`.padEnd(width)} ${value}`.trimEnd();
  return [
    ...rows.map(([k, v]) => line(k, v)),
    // Each list: how many, then one per line.
    ...lists.flatMap(([k, values]) => [
      line(k, values.length ? String(values.length) : '-'),
      ...values.map((v) => `  ${v}`),
    ]),
  ].join('\n');
}
