import type { PunctualClient } from '@punctual/client';
import { SLOT_OUTCOME_WORDS, type TimelineItem, type TimelinePage } from '@punctual/contract';
import type { Command } from 'commander';
import { type CliRun, print } from '../context.js';
import { EXIT } from '../errors.js';
import { instant } from './arguments.js';

const DAY = 86_400_000;
/** How far around `--at` the nearest slot is looked for, widening until one is found. */
const NEAR = [60_000, 3_600_000, DAY, 15 * DAY];

/**
 * Outcomes of a slot that came due and did not run as it should: `punctual explain` exits 3 for
 * one. A slot not planned (before the task, a calendar's day, a run limit spent), still to come,
 * still running or waiting, or whose record went with the history's retention did not fail.
 */
const FAILED: ReadonlySet<TimelineItem['outcome']> = new Set(['failed', 'missed', 'skipped', 'cancelled']);

/**
 * `punctual explain <task>`: why each slot of a task ran or did not — a line per slot in the
 * task's zone, from its timeline, slots in a row with the same outcome and reason folded into one
 * line with their count (`--all`: every slot). Exit code 0 when no slot that came due in the
 * range failed, missed or was skipped or cancelled, 3 when one did.
 */
export function explainCommand(program: Command, run: CliRun): void {
  program
    .command('explain')
    .description(
      "why each slot of a task ran or did not: a line per slot in the task's zone, slots in a row alike folded " +
        "(default: the last day, from the task's creation); exit code 3 when a slot that came due failed, was missed, skipped or cancelled",
    )
    .argument('<task>', 'the task (a deleted one too)')
    .option('--at <time>', 'only the slot nearest this instant, e.g. 2026-06-01T09:00:00+02:00', instant)
    .option('--from <time>', 'start of the range (default: a day before --to)', instant)
    .option('--to <time>', 'end of the range (default: now, or a day after --from)', instant)
    .option('--all', 'a line for every slot, none folded')
    .addHelpText(
      'after',
      '\nExit codes: 0 no slot that came due failed, 1 error, 2 bad usage, 3 a slot failed, was missed, skipped or cancelled.',
    )
    .action(
      async (name: string, options: { at?: string; from?: string; to?: string; all?: boolean }, command: Command) => {
        const client = run.client();
        const { items, zone } = options.at
          ? await nearest(client, name, Date.parse(options.at))
          : await slots(client, name, options.from, options.to);
        const lines = (options.all ? items.map((item) => [item]) : runsAlike(items)).map((alike) =>
          explainLine(alike, zone),
        );
        print(run, command, lines.length ? lines.join('\n') : `${name} has no slots in that range`, { items });
        run.exitCode = items.some((i) => FAILED.has(i.outcome)) ? EXIT.changes : EXIT.ok;
      },
    );
}

/** The slots in runs of the same outcome and reason, in order. */
function runsAlike(items: readonly TimelineItem[]): TimelineItem[][] {
  const runs: TimelineItem[][] = [];
  for (const item of items) {
    const last = runs.at(-1);
    if (last && last[0]!.outcome === item.outcome && last[0]!.reason === item.reason) last.push(item);
    else runs.push([item]);
  }
  return runs;
}

/** One slot's line, or a run's: its first and last slot, the count, and the first one's detail. */
function explainLine(alike: readonly TimelineItem[], zone: string): string {
  const first = alike[0]!;
  const words = SLOT_OUTCOME_WORDS[first.outcome];
  if (alike.length === 1) return `${slotLabel(first, zone)}  ${words} — ${first.detail}`;
  return `${slotLabel(first, zone)} … ${slotLabel(alike.at(-1)!, zone)}  ${words} ×${alike.length} — the first: ${first.detail}`;
}

/** Every slot of the range, page by page, and the zone they are shown in. */
async function slots(
  client: PunctualClient,
  name: string,
  from?: string,
  to?: string,
): Promise<{ items: TimelineItem[]; zone: string }> {
  const items: TimelineItem[] = [];
  let zone = 'UTC';
  for await (const page of client.tasks.timeline(name, { from, to, limit: 1000 }).pages()) {
    zone = (page as TimelinePage).timezone;
    items.push(...page.items);
  }
  return { items, zone };
}

/** The slot nearest `at` (a wider range each time none is found), as a list of at most one. */
async function nearest(
  client: PunctualClient,
  name: string,
  at: number,
): Promise<{ items: TimelineItem[]; zone: string }> {
  for (const reach of NEAR) {
    const page = (await client.tasks
      .timeline(name, { from: new Date(at - reach).toISOString(), to: new Date(at + reach).toISOString(), limit: 1000 })
      .page()) as TimelinePage;
    const best = page.items.reduce<TimelineItem | null>(
      (b, i) => (b && Math.abs(Date.parse(b.scheduledFor) - at) <= Math.abs(Date.parse(i.scheduledFor) - at) ? b : i),
      null,
    );
    if (best) return { items: [best], zone: page.timezone };
  }
  return { items: [], zone: 'UTC' };
}

/** `Mon 2026-03-30 09:00 Europe/Berlin`: the slot's wall time in the task's zone (seconds when it has them). */
export function slotLabel(item: Pick<TimelineItem, 'local'>, zone: string): string {
  const [date, time] = item.local.slice(0, 19).split('T') as [string, string];
  const weekday = new Date(`${date}T00:00:00Z`).toLocaleDateString('en-GB', { weekday: 'short', timeZone: 'UTC' });
  return `${weekday} ${date} ${time.endsWith(':00') ? time.slice(0, 5) : time} ${zone}`;
}
