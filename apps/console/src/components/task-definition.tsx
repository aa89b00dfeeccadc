import { durationMs, type TaskDetail } from '@punctual/contract';
import type { ComponentChildren } from 'preact';
import { api } from '../api.js';
import { mergeExcluded, type MergedFireTime, unexcludedPreview } from '../format/excluded-fire-times.js';
import { scheduleExpression, scheduleWords } from '../format/schedule-words.js';
import { markTransitions } from '../format/fire-times.js';
import { formatInZone } from '../format/time.js';
import { useLoad } from '../load.js';
import { ErrorText, Health, Labels, Time, TwoZones } from './bits.js';

/**
 * How many fire times of the schedule without its exclusions are asked for, to find the excluded
 * ones among the next 20: room for as many excluded as real.
 */
const UNEXCLUDED_COUNT = 40;

function Row({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div class="def-row">
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** The keys the task shares with others: how many of their runs at once, how many starts per window. */
function FlowControl({ policy }: { policy: TaskDetail['policy'] }) {
  const { concurrency, rateLimit } = policy;
  if (!concurrency && !rateLimit) return <span class="muted">—</span>;
  return (
    <>
      {concurrency ? (
        <span class="flow">
          at most {concurrency.limit} at once under <code>{concurrency.key}</code>
        </span>
      ) : null}
      {concurrency && rateLimit ? '; ' : null}
      {rateLimit ? (
        <span class="flow">
          at most {rateLimit.limit} starts per {rateLimit.per} under <code>{rateLimit.key}</code>
        </span>
      ) : null}
    </>
  );
}

/** Everything the task says it is: schedule, handler, payload (secret fields redacted by the API) and policies. */
export function TaskDefinition({ task }: { task: TaskDetail }) {
  const zone = task.schedule.timezone;
  const s = task.schedule;
  const h = task.health;
  return (
    <dl class="definition">
      <Row term="Health">
        <Health health={h} zone={zone} />
        {task.pauseNote ? <span class="block pause-note">Paused: {task.pauseNote}</span> : null}
        <span class="muted small block">
          last success <Time at={h.lastSuccessAt} zone={zone} />; last slot <Time at={h.lastSlotAt} zone={zone} />;{' '}
          {h.consecutiveFailures} consecutive failure
          {h.consecutiveFailures === 1 ? '' : 's'}
        </span>
      </Row>
      {task.slo ? <Row term="SLO">starts within {task.slo.startWithin} of its fire time</Row> : null}
      <Row term="Description">{task.description ?? <span class="muted">—</span>}</Row>
      <Row term="Schedule">
        {scheduleWords(s)} <code>{scheduleExpression(s)}</code>
      </Row>
      <Row term="Time zone">{zone}</Row>
      {s.startAt || s.endAt ? (
        <Row term="Window">
          from <Time at={s.startAt} zone={zone} /> until <Time at={s.endAt} zone={zone} />
        </Row>
      ) : null}
      {durationMs(s.jitter) > 0 ? <Row term="Jitter">up to {s.jitter}</Row> : null}
      {s.exclude?.length ? (
        <Row term="Excluded days">
          <ul class="labels" aria-label="Excluded calendars">
            {s.exclude.map((name) => (
              <li key={name} class="chip">
                <a href={`/calendars/${encodeURIComponent(name)}`} title={`the days calendar ${name} excludes`}>
                  {name}
                </a>
              </li>
            ))}
          </ul>
        </Row>
      ) : null}
      {s.dst ? (
        <Row term="Daylight saving">
          gap: {s.dst.gap ?? 'shift'}, overlap: {s.dst.overlap ?? 'first'}
        </Row>
      ) : null}
      <Row term="Handler">
        <code>{task.handler}</code>
      </Row>
      <Row term="Payload">
        <pre class="json">{JSON.stringify(task.payload, null, 2)}</pre>
        {task.secretFields.length ? (
          <span class="muted small">secret fields: {task.secretFields.join(', ')}</span>
        ) : null}
      </Row>
      <Row term="Overlap">{task.policy.overlap}</Row>
      <Row term="Misfire">
        {task.policy.misfire}, late after {task.policy.maxDelay}
      </Row>
      <Row term="Retries">
        {task.policy.retry.attempts} {task.policy.retry.attempts === 1 ? 'attempt' : 'attempts'}, backoff{' '}
        {task.policy.retry.backoff} up to {task.policy.retry.maxBackoff}; timeout {task.policy.timeout}
      </Row>
      <Row term="Flow control">
        <FlowControl policy={task.policy} />
      </Row>
      <Row term="Failure breaker">
        {task.policy.pauseAfter ? (
          `pauses the task after ${task.policy.pauseAfter.failures} failed slot(s) within ${task.policy.pauseAfter.within}`
        ) : (
          <span class="muted">—</span>
        )}
      </Row>
      {s.remainingRuns !== null ? (
        <Row term="Run limit">{s.remainingRuns === 1 ? '1 run left' : `${s.remainingRuns} runs left`}</Row>
      ) : null}
      <Row term="Notify">
        {task.notify.url ? `${task.notify.url} on ${task.notify.on.join(', ')}` : <span class="muted">—</span>}
      </Row>
      <Row term="Labels">
        <Labels labels={task.labels} />
      </Row>
      {task.managedBy ? <Row term="Managed by">{task.managedBy}</Row> : null}
      <Row term="Missed slots">{task.missedCount}</Row>
      <Row term="Version">
        {task.version}, changed <Time at={task.updatedAt} zone={zone} />
      </Row>
      <Row term="Created">
        <Time at={task.createdAt} zone={zone} />
      </Row>
    </dl>
  );
}

/**
 * The task's fire times as if it excluded no day, when it excludes some: those that are not among
 * its upcoming ones are the excluded ones. (Which of its calendars excludes each is the API's to
 * know; the console names the task's calendars rather than read their rules a second time.)
 */
function useExcluded(task: TaskDetail) {
  const request = unexcludedPreview(task, UNEXCLUDED_COUNT);
  return useLoad(
    async () => (request ? { times: (await api.schedules.preview(request)).fireTimes.map((f) => f.at) } : null),
    [JSON.stringify(request), task.upcoming.at(-1)],
  );
}

/** A fire time an excluded day leaves out: struck through, with the calendars the task excludes. */
function ExcludedFireTime({ at, zone, calendars }: { at: string; zone: string; calendars: string[] }) {
  const which = calendars.join(', ');
  return (
    <>
      <del title={`not run: ${which} excludes this day`}>
        <TwoZones at={at} zone={zone} />
      </del>{' '}
      <span class="excluded-mark">excluded ({which})</span>
    </>
  );
}

/**
 * The next fire times in the task's zone and the browser's, each change of the zone's clocks
 * marked; when the task excludes days, the fire times they leave out are struck through among them.
 */
export function FireTimes({ task, now, count }: { task: TaskDetail; now: number; count: number }) {
  const excluded = useExcluded(task);
  if (task.upcoming.length === 0) {
    const why =
      task.status === 'paused'
        ? 'the task is paused'
        : task.status === 'completed'
          ? 'the task has completed'
          : task.lastError
            ? 'its schedule cannot be computed'
            : 'the schedule has no more slots';
    return <p class="empty">No upcoming fire times: {why}.</p>;
  }
  const zone = task.schedule.timezone;
  const names = task.schedule.exclude ?? [];
  const times: MergedFireTime[] = excluded.data
    ? mergeExcluded(task.upcoming, excluded.data.times, task.upcoming.length < count)
    : task.upcoming.map((at) => ({ at, excluded: false }));
  let number = 0;
  return (
    <>
      <ol class="fire-times">
        {markTransitions(
          times.map((t) => t.at),
          zone,
          new Date(now),
        ).map((row, i) => {
          const isExcluded = times[i]!.excluded;
          if (!isExcluded) number += 1;
          const calendars = isExcluded ? names : [];
          const classes =
            [row.transition ? 'dst' : '', isExcluded ? 'excluded' : ''].filter(Boolean).join(' ') || undefined;
          return (
            <li
              key={row.at}
              class={classes}
              value={isExcluded ? undefined : number}
              aria-label={
                isExcluded ? `${formatInZone(row.at, zone)}: excluded by ${calendars.join(', ')}, not run` : undefined
              }
            >
              {row.transition ? (
                <span class="dst-mark">
                  <abbr title="daylight saving time">DST</abbr>: {row.transition.words}
                </span>
              ) : null}
              {isExcluded ? (
                <ExcludedFireTime at={row.at} zone={zone} calendars={calendars} />
              ) : (
                <TwoZones at={row.at} zone={zone} />
              )}
            </li>
          );
        })}
      </ol>
      {excluded.error ? <ErrorText error={`The excluded days could not be shown: ${excluded.error}`} /> : null}
    </>
  );
}
