import { Logger } from '@nestjs/common';
import { Counter } from 'prom-client';

/**
 * Every place that lets a failure pass, with what the failure costs. A fixed table: the `site`
 * label of `punctual_best_effort_failures_total` takes only these values (bounded cardinality),
 * and the log line says what was lost and what makes up for it.
 */
export const BEST_EFFORT_SITES = {
  'api-keys.touch': "an API key's lastUsedAt was not updated; the request it authenticated goes on",
  'clock.publish-offset':
    "this process's clock offset was not published; the cluster view shows the last one until it expires",
  'leader.campaign':
    'a leader-lock refresh or attempt failed on Redis; a leader keeps its lease until the watchdog ends it, a follower tries again next period',
  'leader.release': 'the leader lock was not released at stop; the next leader takes it when its lease runs out',
  'queue.remove-ended-job':
    "an attempt's ended job was not removed, so adding it again adds nothing; the relay's next pass tries again",
  'scheduler.announce-released':
    'a released shard was not announced; the other schedulers try for it at their next period',
  'scheduler.leave':
    'this scheduler was not removed from the members; it counts toward the shares until its announcement runs out',
  'tasks.announce-cancel':
    'a cancel was not published: a worker running that execution is not told to abort it (the row is cancelled already)',
  'tasks.announce-change':
    'a task change was not published: the leader plans it at its next tick and fires inserted runs at its next sweep',
  'worker.clear-woken':
    "a held job going back to wait kept the mark of the wake that brought it: when it comes back on its own it passes a wake on to its key's next held run, which asks once for nothing",
  'worker.forget-group':
    "a fire group's membership was not forgotten; it expires within a day (the relay looks past it to the ended group job)",
  'worker.announce':
    "this worker's handlers were not announced; the directory keeps the last announce until it expires, the next comes in 15 s",
  'worker.requeue-at-shutdown':
    "an attempt handed back at shutdown was not queued again; the leader's relay finds the row without a job and queues it",
  'worker.withdraw': 'this worker was not withdrawn from the directory; its entry expires',
  'worker.breaker': 'the failure breaker could not check or pause the task; the next slot that ends dead checks again',
} as const satisfies Record<string, string>;

/** Where {@link bestEffort} is called: one of {@link BEST_EFFORT_SITES}. */
export type BestEffortSite = keyof typeof BEST_EFFORT_SITES;

/**
 * Failures let pass by {@link bestEffort}, by site. One counter for the process, registered in
 * every {@link Metrics} registry: best-effort calls sit in libs that hold no `Metrics` (a
 * repository, a plain class), as `tracing` does for spans.
 */
export const bestEffortFailures = new Counter({
  name: 'punctual_best_effort_failures_total',
  help: 'Failures of work that may fail without failing its caller (a publish, an announce, a cleanup), by site',
  labelNames: ['site'],
  registers: [],
});
// Every series exists from the start: rate() and increase() miss the first failure of a series born at 1.
for (const site of Object.keys(BEST_EFFORT_SITES)) bestEffortFailures.inc({ site }, 0);

const logger = new Logger('BestEffort');

/**
 * Awaits `work` and never throws: a failure is logged (warn, with `site` and `err`) and counted in
 * `punctual_best_effort_failures_total{site}`, and resolves `undefined`. For work whose failure must
 * not fail the caller and that something else makes up for (see {@link BEST_EFFORT_SITES}) — never
 * for a handler's outcome or a state transition.
 */
export async function bestEffort<T>(work: Promise<T>, site: BestEffortSite): Promise<T | undefined> {
  try {
    return await work;
  } catch (error) {
    bestEffortFailures.inc({ site });
    logger.warn({ site, err: error }, `${site} failed: ${BEST_EFFORT_SITES[site]}`);
    return undefined;
  }
}
