import { CATCH_UPS, durationMs, HEALTH_STATES, type HealthState, type Task, TASK_STATUSES, type TaskDetail } from '@punctual/contract';
import { type Command, Option } from 'commander';
import { type CliRun, print } from '../context.js';
import { bothZones, inUtc, inZone, scheduleText, table } from '../format.js';
import { jsonObject, positiveInt } from './arguments.js';

/** `punctual tasks ls|get|pause|resume|trigger|delete`. */
export function tasksCommand(program: Command, run: CliRun): void {
  const tasks = program.command('tasks').description('list, show, pause, resume, trigger and delete tasks');

  tasks
    .command('ls')
    .description('list tasks by name: health, status, schedule and next run in the task\'s zone and UTC')
    .addOption(new Option('--status <status>', 'only tasks in this status').choices(TASK_STATUSES))
    .addOption(new Option('--health <state>', 'only tasks in this health state (late: a slot has not started in time; failing: its latest finished slot is dead)').choices(HEALTH_STATES))
    .option('--handler <handler>', 'only tasks with this handler')
    .option('--label <key=value>', 'only tasks with this label (repeat for all of several)', (value: string, list: string[] = []) => [...list, value])
    .option('--managed-by <manager>', 'only tasks this manager manages (e.g. punctual-apply)')
    .option('-q, --search <text>', 'a substring of the name or description')
    .option('--limit <n>', 'at most this many tasks', positiveInt)
    .action(async (options: { status?: Task['status']; health?: HealthState; handler?: string; label?: string[]; managedBy?: string; search?: string; limit?: number }, command: Command) => {
      const items: Task[] = [];
      const list = run.client().tasks.list({ status: options.status, health: options.health, handler: options.handler, label: options.label, managedBy: options.managedBy, q: options.search });
      for await (const task of list) {
        if (options.limit !== undefined && items.length >= options.limit) break;
        items.push(task);
      }
      const rows = items.map((t) => [
        t.health.state, t.name, t.status, scheduleText(t.schedule), t.schedule.timezone,
        t.nextRunAt ? inZone(t.nextRunAt, t.schedule.timezone) : '-', t.nextRunAt ? inUtc(t.nextRunAt) : '-', t.managedBy ?? '-',
      ]);
      print(run, command, items.length ? table(['HEALTH', 'NAME', 'STATUS', 'SCHEDULE', 'ZONE', 'NEXT RUN (ZONE)', 'NEXT RUN (UTC)', 'MANAGED BY'], rows) : 'no tasks', { items });
    });

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
    .action(async (name: string, options: { cancel?: boolean }, command: Command) => {
      const task = await run.client().tasks.pause(name, { cancel: options.cancel });
      print(run, command, `paused ${task.name}`, task);
    });

  tasks
    .command('resume')
    .description('resume a paused task')
    .argument('<name>', 'the task')
    .addOption(new Option('--catch-up <what>', "the slots of the pause: skip them, run the latest, or all (default: the task's misfire policy)").choices(CATCH_UPS))
    .action(async (name: string, options: { catchUp?: (typeof CATCH_UPS)[number] }, command: Command) => {
      const task = await run.client().tasks.resume(name, { catchUp: options.catchUp });
      print(run, command, `resumed ${task.name}: next run ${bothZones(task.nextRunAt, task.schedule.timezone)}`, task);
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
    ['schedule', `${scheduleText(task.schedule)} in ${zone}${durationMs(task.schedule.jitter) > 0 ? `, jitter ${task.schedule.jitter}` : ''}`],
    ...(task.schedule.exclude?.length ? [['excludes', `the days of calendar${task.schedule.exclude.length > 1 ? 's' : ''} ${task.schedule.exclude.join(', ')}`] as [string, string]] : []),
    ['policy', `overlap ${p.overlap}, misfire ${p.misfire}, max delay ${p.maxDelay}, ${p.retry.attempts} attempts (backoff ${p.retry.backoff} up to ${p.retry.maxBackoff}), timeout ${p.timeout}`],
    ['flow control', flowText(p)],
    ['payload', JSON.stringify(task.payload)],
    ['labels', Object.entries(task.labels).map(([k, v]) => `${k}=${v}`).join(', ') || '-'],
    ['managed by', task.managedBy ?? '-'],
    ['next runs', task.upcoming.length ? '' : '-'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  const lines = rows.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}`.trimEnd());
  lines.push(...task.upcoming.map((at) => `  ${bothZones(at, zone)}`));
  const last = task.lastExecution;
  lines.push(`${'last run:'.padEnd(width)} ${last ? `${last.status}${last.skipReason ? ` (${last.skipReason})` : ''}, slot ${bothZones(last.scheduledFor, zone)}` : '-'}`);
  if (task.lastError) lines.push(`${'error:'.padEnd(width)} ${task.lastError}`);
  return lines.join('\n');
}
