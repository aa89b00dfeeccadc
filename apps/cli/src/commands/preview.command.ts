import { TASK_DEFAULTS } from '@punctual/contract';
import type { Command } from 'commander';
import { type CliRun, print } from '../context.js';
import { inUtc, table } from '../format.js';
import { instant, positiveInt } from './arguments.js';

/** `punctual preview '<cron>'`: the next fire times of a cron expression. */
export function previewCommand(program: Command, run: CliRun): void {
  program
    .command('preview')
    .description('the next fire times of a cron expression, in its zone and UTC')
    .argument('<cron>', "a cron expression, quoted: '0 9 * * 1-5' (6 fields: seconds first)")
    .option('--tz <zone>', `an IANA time zone (default ${TASK_DEFAULTS.timezone})`)
    .option('--count <n>', 'how many fire times', positiveInt)
    .option('--from <instant>', 'fire times from this instant on (default: now)', instant)
    .action(async (cron: string, options: { tz?: string; count?: number; from?: string }, command: Command) => {
      const result = await run
        .client()
        .schedules.preview({ schedule: { cron, timezone: options.tz }, count: options.count, from: options.from });
      const zone = options.tz ?? TASK_DEFAULTS.timezone;
      const rows = result.fireTimes.map((t, i) => [
        String(i + 1),
        `${t.local.slice(0, 19).replace('T', ' ')}${t.local.slice(23)}`,
        inUtc(t.at),
      ]);
      print(run, command, rows.length ? table(['#', `LOCAL (${zone})`, 'UTC'], rows) : 'no fire times', result);
    });
}
