import type { Random } from './random.js';

/** A task of the chaos run as the API receives it. */
export interface ChaosTask {
  name: string;
  handler: 'http' | 'app-hook';
  payload: { url: string };
  schedule: Record<string, unknown>;
  policy: Record<string, unknown>;
}

/** Schedules a task may be switched between by an edit (they share slots, and differ in others). */
export const SWITCHABLE = ['*/2 * * * * *', '*/3 * * * * *', '*/4 * * * * *'];

/**
 * The 56 tasks of a chaos run: every-second and every-few-seconds crons, intervals, an RRULE and
 * one-off runs spread over the run, under every overlap and misfire policy; each calls the
 * counting webhook (`url(delayMs, failFirst)`), a few of them slowly, a few failing once before
 * they succeed (retried after a short backoff), two under the default policies with a retry that
 * lands after their next slot; four of a handler that only the application's worker offers.
 */
export function chaosTasks(
  random: Random,
  url: (query: { delay?: number; failFirst?: number }) => string,
  runMs: number,
): ChaosTask[] {
  const tasks: ChaosTask[] = [];
  const overlaps = ['skip', 'skip', 'skip', 'allow', 'buffer_one', 'replace'];
  const misfires = ['run_once', 'run_once', 'skip', 'run_all'];
  const zones = ['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/New_York'];
  const add = (kind: string, i: number, schedule: Record<string, unknown>) => {
    const failFirst = i % 7 === 3 ? 1 : 0;
    tasks.push({
      name: `${kind}-${i}`,
      handler: 'http',
      payload: { url: url({ delay: random.pick([0, 0, 5, 20, 50]), failFirst }) },
      schedule: { timezone: random.pick(zones), ...schedule },
      policy: {
        overlap: random.pick(overlaps),
        misfire: random.pick(misfires),
        maxDelay: '1m',
        retry: { attempts: 5, backoff: '500ms', maxBackoff: '2s' },
        timeout: '10s',
      },
    });
  };
  for (let i = 0; i < 16; i += 1) add('second', i, { cron: '* * * * * *' });
  for (let i = 0; i < 12; i += 1) add('switch', i, { cron: SWITCHABLE[i % SWITCHABLE.length] });
  for (let i = 0; i < 6; i += 1) add('every', i, { every: `${2 + (i % 3)}s` });
  for (let i = 0; i < 4; i += 1) add('rrule', i, { rrule: `RRULE:FREQ=SECONDLY;INTERVAL=${3 + i}` });
  for (let i = 0; i < 12; i += 1)
    add('once', i, { at: new Date(Date.now() + 5_000 + Math.floor(random.next() * runMs)).toISOString() });
  // The default policies (overlap skip): a 1.5 s run that fails its first attempt, retried a second
  // later — after the next slot has come. The retry finishes its slot; that next slot is the one skipped.
  for (let i = 0; i < 2; i += 1) {
    tasks.push({
      name: `retry-${i}`,
      handler: 'http',
      payload: { url: url({ delay: 1_500, failFirst: 1 }) },
      schedule: { cron: '*/2 * * * * *', timezone: random.pick(zones) },
      policy: { retry: { attempts: 5, backoff: '1s', maxBackoff: '2s' }, timeout: '10s' },
    });
  }
  // Runs of a handler only the application's worker offers (chaos/app-worker.ts): they wait
  // through its restarts and Redis' — never ending dead — and store results Postgres must clean.
  for (let i = 0; i < 4; i += 1) {
    tasks.push({
      name: `app-${i}`,
      handler: 'app-hook',
      payload: { url: url({ delay: random.pick([0, 5, 20]), failFirst: i === 3 ? 1 : 0 }) },
      schedule: { cron: i % 2 === 0 ? '* * * * * *' : '*/2 * * * * *', timezone: random.pick(zones) },
      policy: { retry: { attempts: 5, backoff: '500ms', maxBackoff: '2s' }, timeout: '10s' },
    });
  }
  return tasks;
}
