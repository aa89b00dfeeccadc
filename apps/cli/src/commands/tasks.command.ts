import {
  CATCH_UPS,
  durationMs,
  HEALTH_STATES,
  type HealthState,
  type Task,
  type TaskChanges,
  TASK_STATUSES,
  type TaskDetail,
  type TaskVersion,
} from '@punctual/contract';
import { type Command, Option } from 'commander';
import { type CliRun, print } from '../context.js';
import { bothZones, inUtc, inZone, scheduleText, table } from '../format.js';
import { jsonObject, positiveInt } from './arguments.js';

/** `punctual tasks ls|get|pause|resume|trigger|delete`. */
export function tasksCommand(program: Command, run: CliRun): void {
  const tasks = program
    .command('tasks')
    .description('list, show, pause, resume, trigger and delete tasks; their history of versions, and rollback');

  tasks
    .command('ls')
    .description("list tasks by name: health, status, schedule and next run in the task's zone and UTC")
    .addOption(new Option('--status <status>', 'only tasks in this status').choices(TASK_STATUSES))
    .addOption(
      new Option(
        '--health <state>',
        'only tasks in this health state (late: a slot has not started in time; failing: its latest finished slot is dead)',
      ).choices(HEALTH_STATES),
    )
    .option('--handler <handler>', 'only tasks with this handler')
    .option(
      '--label <key=value>',
      'only tasks with this label (repeat for all of several)',
      (value: string, list: string[] = []) => [...list, value],
    )
    .option('--managed-by <manager>', 'only tasks this manager manages (e.g. punctual-apply)')
    .option('-q, --search <text>', 'a substring of the name or description')
    .option('--limit <n>', 'at most this many tasks', positiveInt)
    .action(
      async (
        options: {
          status?: Task['status'];
          health?: HealthState;
          handler?: string;
          label?: string[];
          managedBy?: string;
          search?: string;
          limit?: number;
        },
        command: Command,
      ) => {
        const items: Task[] = [];
        const list = run.client().tasks.list({
          status: options.status,
          health: options.health,
          handler: options.handler,
          label: options.label,
          managedBy: options.managedBy,
          q: options.search,
        });
        for await (const task of list) {
          if (options.limit !== undefined && items.length >= options.limit) break;
          items.push(task);
        }
        const rows = items.map((t) => [
          t.health.state,
          t.name,
          t.status,
          scheduleText(t.schedule),
          t.schedule.timezone,
          t.nextRunAt ? inZone(t.nextRunAt, t.schedule.timezone) : '-',
          t.nextRunAt ? inUtc(t.nextRunAt) : '-',
          t.managedBy ?? '-',
        ]);
        print(
          run,
          command,
          items.length
            ? table(
                ['HEALTH', 'NAME', 'STATUS', 'SCHEDULE', 'ZONE', 'NEXT RUN (ZONE)', 'NEXT RUN (UTC)', 'MANAGED BY'],
                rows,
              )
            : 'no tasks',
          { items },
        );
      },
    );

  tasks
    .command('get')
    .description('show a task: its health, definition, next fire times and last run')
    .argument('<name>', 'the task')
    .action(async (name: string, _options: object, command: Command) => {
      const task = await run.client().tasks.get(name);
      print(run, command, detailText(task), task);
    });

  tasks
    .command('pause')
    .description('pause a task: no new runs until it is resumed')
    .argument('<name>', 'the task')
    .option('--cancel', 'also cancel its runs in progress (by default they finish)')
    .option('--note <text>', 'why: shown with the task (pauseNote) and its timeline until it resumes')
    .action(async (name: string, options: { cancel?: boolean; note?: string }, command: Command) => {
      const task = await run.client().tasks.pause(name, { cancel: options.cancel, note: options.note });
      print(run, command, `paused ${task.name}${task.pauseNote ? `: ${task.pauseNote}` : ''}`, task);
    });

  tasks
    .command('resume')
    .description('resume a paused task')
    .argument('<name>', 'the task')
    .addOption(
      new Option(
        '--catch-up <what>',
        "the slots of the pause: skip them, run the latest, or all (default: the task's misfire policy)",
      ).choices(CATCH_UPS),
    )
    .action(async (name: string, options: { catchUp?: (typeof CATCH_UPS)[number] }, command: Command) => {
      const task = await run.client().tasks.resume(name, { catchUp: options.catchUp });
      print(run, command, `resumed ${task.name}: next run ${bothZones(task.nextRunAt, task.schedule.timezone)}`, task);
    });

  tasks
    .command('history')
    .description(
      "a task's versions, newest first (a deleted task's too): who changed it, when, why, and what each change changed",
    )
    .argument('<name>', 'the task')
    .option('--limit <n>', 'at most this many versions (default 20)', positiveInt)
    .action(async (name: string, options: { limit?: number }, command: Command) => {
      const client = run.client();
      const items: TaskVersion[] = [];
      for await (const version of client.tasks.versions(name, { limit: Math.min(options.limit ?? 20, 100) })) {
        if (items.length >= (options.limit ?? 20)) break;
        items.push(version);
      }
      const diffs = await Promise.all(items.map((v) => client.tasks.version(name, v.version).then((d) => d.diff)));
      const rows = items.map((v, i) => [
        `${v.version}${v.current ? '*' : ''}`,
        inUtc(v.changedAt),
        v.action.replace(/^task\./, ''),
        v.changedBy,
        v.reason ?? '-',
        diffs[i]!.map((d) =>
          d.secret ? `${d.field} (secret)` : `${d.field}: ${short(d.before)} → ${short(d.after)}`,
        ).join('; ') || '-',
      ]);
      print(
        run,
        command,
        `${table(['VERSION', 'CHANGED (UTC)', 'ACTION', 'BY', 'REASON', 'CHANGES'], rows)}\n* the task's version now`,
        { items },
      );
    });

  tasks
    .command('rollback')
    .description(
      'make a new version of the task equal to an old one (a deleted task is restored); --dry-run shows what it would do',
    )
    .argument('<name>', 'the task')
    .requiredOption('--to <version>', 'the version to go back to (punctual tasks history lists them)', positiveInt)
    .option('--dry-run', 'change nothing: show the fire times before and after and what becomes of the planned runs')
    .option('--reason <text>', 'why, kept with the new version')
    .action(async (name: string, options: { to: number; dryRun?: boolean; reason?: string }, command: Command) => {
      const task = await run
        .client()
        .tasks.rollback(name, { version: options.to, dryRun: options.dryRun, reason: options.reason });
      if (task.dryRun && task.changes) {
        print(run, command, changesText(task.changes, `rolling ${name} back to version ${options.to} would`), task);
        return;
      }
      print(
        run,
        command,
        `${name} is now version ${task.version}, equal to version ${options.to}: next run ${bothZones(task.nextRunAt, task.schedule.timezone)}`,
        task,
      );
    });

  tasks
    .command('trigger')
    .description('run a task now (even while paused)')
    .argument('<name>', 'the task')
    .option('--payload <json>', 'a JSON object that replaces the payload for this run', jsonObject)
    .action(async (name: string, options: { payload?: Record<string, unknown> }, command: Command) => {
      const execution = await run.client().tasks.trigger(name, { payload: options.payload });
      print(run, command, `triggered ${name}: execution ${execution.id} (${execution.status})`, execution);
    });

  tasks
    .command('delete')
    .description('delete a task: its pending runs are cancelled, its history is kept')
    .argument('<name>', 'the task')
    .action(async (name: string, _options: object, command: Command) => {
      await run.client().tasks.delete(name);
      print(run, command, `deleted ${name}`, { deleted: name });
    });
}

/** `at most 3 at once under openai; at most 5 starts per 1s under mail`, or `-`. */
/** A field's value on one line, cut at 40 characters. */
function short(value: unknown): string {
  const text = value === undefined ? '(none)' : JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

/** What a change would do, as `punctual tasks rollback --dry-run` and `punctual diff` print it. */
export function changesText(changes: TaskChanges, lead: string): string {
  const lines = [`${lead}:`];
  const times = (list: { local: string }[]) => list.map((f) => f.local).join(', ');
  if (changes.removed.length) lines.push(`  no longer fire at: ${times(changes.removed)}`);
  if (changes.added.length) lines.push(`  newly fire at: ${times(changes.added)}`);
  for (const m of changes.moved) lines.push(`  move ${m.from.local} → ${m.to.local}`);
  if (!changes.removed.length && !changes.added.length && !changes.moved.length)
    lines.push(`  keep the next ${changes.fireTimes.after.length} fire times as they are`);
  const { kept, withdrawn, retimed } = changes.pending;
  if (kept.length + withdrawn.length + retimed.length)
    lines.push(`  planned runs: ${kept.length} kept, ${withdrawn.length} withdrawn, ${retimed.length} re-timed`);
  if (changes.running.length)
    lines.push(`  runs in progress: ${changes.running.length} (they finish under the definition they started with)`);
  for (const w of changes.warnings) lines.push(`  warning: ${w}`);
  lines.push(`  next fire times after: ${times(changes.fireTimes.after.slice(0, 5)) || '(none)'}`);
  return lines.join('\n');
}

function flowText({ concurrency, rateLimit }: TaskDetail['policy']): string {
  const parts = [
    concurrency && `at most ${concurrency.limit} at once under ${concurrency.key}`,
    rateLimit && `at most ${rateLimit.limit} starts per ${rateLimit.per} under ${rateLimit.key}`,
  ].filter(Boolean);
  return parts.join('; ') || '-';
}

/** `failing, last success 2026-03-29 09:00:00+02:00 Europe/Berlin (…Z), 2 consecutive failures`. */
function healthText(health: TaskDetail['health'], zone: string): string {
  const failures = `${health.consecutiveFailures} consecutive failure${health.consecutiveFailures === 1 ? '' : 's'}`;
  return `${health.state}, last success ${bothZones(health.lastSuccessAt, zone)}, ${failures}`;
}

function detailText(task: TaskDetail): string {
  const zone = task.schedule.timezone;
  const p = task.policy;
  const rows: [string, string][] = [
    ['name', task.name],
    ['description', task.description ?? '-'],
    ['handler', task.handler],
    ['status', `${task.status} (version ${task.version})`],
    ['health', healthText(task.health, zone)],
    ...(task.slo ? [['slo', `start within ${task.slo.startWithin} of the fire time`] as [string, string]] : []),
    [
      'schedule',
      `${scheduleText(task.schedule)} in ${zone}${durationMs(task.schedule.jitter) > 0 ? `, jitter ${task.schedule.jitter}` : ''}`,
    ],
    ...(task.schedule.exclude?.length
      ? [
          [
            'excludes',
            `the days of calendar${task.schedule.exclude.length > 1 ? 's' : ''} ${task.schedule.exclude.join(', ')}`,
          ] as [string, string],
        ]
      : []),
    [
      'policy',
      `overlap ${p.overlap}, misfire ${p.misfire}, max delay ${p.maxDelay}, ${p.retry.attempts} attempts (backoff ${p.retry.backoff} up to ${p.retry.maxBackoff}), timeout ${p.timeout}`,
    ],
    ['flow control', flowText(p)],
    ['payload', JSON.stringify(task.payload)],
    [
      'labels',
      Object.entries(task.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ') || '-',
    ],
    ['managed by', task.managedBy ?? '-'],
    ['next runs', task.upcoming.length ? '' : '-'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  const lines = rows.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}`.trimEnd());
  lines.push(...task.upcoming.map((at) => `  ${bothZones(at, zone)}`));
  const last = task.lastExecution;
  lines.push(
    `${'last run:'.padEnd(width)} ${last ? `${last.status}${last.skipReason ? ` (${last.skipReason})` : ''}, slot ${bothZones(last.scheduledFor, zone)}` : '-'}`,
  );
  if (task.lastError) lines.push(`${'error:'.padEnd(width)} ${task.lastError}`);
  return lines.join('\n');
}
