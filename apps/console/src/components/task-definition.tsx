import { durationMs, type TaskDetail } from '@punctual/contract';
import type { ComponentChildren } from 'preact';
import { scheduleExpression, scheduleWords } from '../format/schedule-words.js';
import { markTransitions } from '../format/fire-times.js';
import { Labels, Time, TwoZones } from './bits.js';

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
  return (
    <dl class="definition">
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
      {s.dst ? <Row term="Daylight saving">gap: {s.dst.gap ?? 'shift'}, overlap: {s.dst.overlap ?? 'first'}</Row> : null}
      <Row term="Handler">
        <code>{task.handler}</code>
      </Row>
      <Row term="Payload">
        <pre class="json">{JSON.stringify(task.payload, null, 2)}</pre>
        {task.secretFields.length ? <span class="muted small">secret fields: {task.secretFields.join(', ')}</span> : null}
      </Row>
      <Row term="Overlap">{task.policy.overlap}</Row>
      <Row term="Misfire">
        {task.policy.misfire}, late after {task.policy.maxDelay}
      </Row>
      <Row term="Retries">
        {task.policy.retry.attempts} attempts, backoff {task.policy.retry.backoff} up to {task.policy.retry.maxBackoff}; timeout {task.policy.timeout}
      </Row>
      <Row term="Flow control">
        <FlowControl policy={task.policy} />
      </Row>
      <Row term="Notify">{task.notify.url ? `${task.notify.url} on ${task.notify.on.join(', ')}` : <span class="muted">—</span>}</Row>
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

/** The next fire times in the task's zone and the browser's, each change of the zone's clocks marked. */
export function FireTimes({ task, now }: { task: TaskDetail; now: number }) {
  if (task.upcoming.length === 0) {
    const why = task.status === 'paused' ? 'the task is paused' : task.status === 'completed' ? 'the task has completed' : task.lastError ? 'its schedule cannot be computed' : 'the schedule has no more slots';
    return <p class="empty">No upcoming fire times: {why}.</p>;
  }
  const zone = task.schedule.timezone;
  return (
    <ol class="fire-times">
      {markTransitions(task.upcoming, zone, new Date(now)).map((row) => (
        <li key={row.at} class={row.transition ? 'dst' : undefined}>
          {row.transition ? (
            <span class="dst-mark">
              <abbr title="daylight saving time">DST</abbr>: {row.transition.words}
            </span>
          ) : null}
          <TwoZones at={row.at} zone={zone} />
        </li>
      ))}
    </ol>
  );
}
