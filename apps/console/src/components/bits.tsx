import type { Execution, HealthState, TaskHealth } from '@punctual/contract';
import type { ComponentChildren } from 'preact';
import { browserZone, formatInZone, relative } from '../format/time.js';

/** A status written as its word (never only a colour): `succeeded`, `dead`, `skipped (overlap)`. */
export function Status({ status, reason }: { status: string; reason?: string | null }) {
  return (
    <span class={`status status-${status}`}>
      {status}
      {reason ? ` (${reason.replace(/_/g, ' ')})` : ''}
    </span>
  );
}

/** A health state as words: `never ran` for `never_ran`. */
export function healthWords(state: HealthState): string {
  return state.replace(/_/g, ' ');
}

/** `last success 2026-06-01 09:00:02 GMT+2; 3 consecutive failures`: what a health badge says on hover. */
export function healthDetails(health: TaskHealth, zone: string): string {
  const success = health.lastSuccessAt ? `last success ${formatInZone(health.lastSuccessAt, zone)}` : 'no success yet';
  const failures = `${health.consecutiveFailures} consecutive failure${health.consecutiveFailures === 1 ? '' : 's'}`;
  return `${success}; ${failures}`;
}

/** A task's health as its word (`failing`), coloured like a status; its last success and failures on hover. */
export function Health({ health, zone }: { health: TaskHealth; zone: string }) {
  return (
    <span class={`status health-${health.state}`} title={healthDetails(health, zone)}>
      {healthWords(health.state)}
    </span>
  );
}

/** An instant as wall time in `zone`, to the second, with the zone; the exact instant on hover. */
export function Time({
  at,
  zone,
  withRelative = false,
}: {
  at: string | null | undefined;
  zone: string;
  withRelative?: boolean;
}) {
  if (!at) return <span class="muted">—</span>;
  return (
    <time dateTime={at} title={at}>
      {formatInZone(at, zone)}
      {withRelative ? <span class="muted nowrap"> · {relative(at)}</span> : null}
    </time>
  );
}

/** An instant in the task's zone and, when it differs, in the browser's. */
export function TwoZones({
  at,
  zone,
  withRelative = false,
}: {
  at: string | null | undefined;
  zone: string;
  withRelative?: boolean;
}) {
  if (!at) return <span class="muted">—</span>;
  const mine = browserZone();
  return (
    <span class="two-zones">
      <Time at={at} zone={zone} withRelative={withRelative} />
      {mine !== zone ? (
        <span class="muted small">
          {' '}
          yours: <Time at={at} zone={mine} />
        </span>
      ) : null}
    </span>
  );
}

/** How late a run started: `startedAt − fireAt`, or null before it started. */
export function startLagMs(execution: Pick<Execution, 'startedAt' | 'fireAt'>): number | null {
  return execution.startedAt ? Date.parse(execution.startedAt) - Date.parse(execution.fireAt) : null;
}

export function Labels({ labels }: { labels: Record<string, string> }) {
  const entries = Object.entries(labels);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="labels" aria-label="Labels">
      {entries.map(([key, value]) => (
        <li key={key} class="label">
          {key}={value}
        </li>
      ))}
    </ul>
  );
}

/** What an action did, or why it failed: read out by screen readers as it appears. */
export function Notice({ notice }: { notice: { kind: 'ok' | 'error'; text: string } | null }) {
  return (
    <div class="notice-slot" role="status" aria-live="polite">
      {notice ? <p class={`notice notice-${notice.kind}`}>{notice.text}</p> : null}
    </div>
  );
}

export function ErrorText({ error }: { error: string | null }) {
  return error ? (
    <p class="notice notice-error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Section({
  title,
  children,
  actions,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  const id = `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section class="card" aria-labelledby={id}>
      <header class="card-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

/**
 * Previous / next over a cursor-paged list: `cursors` is the trail of cursors that led to the page
 * shown (the first page's is `undefined`), `next` the cursor of the page after it, if any.
 */
export function CursorPager({
  cursors,
  next,
  onChange,
  showPage = false,
}: {
  cursors: (string | undefined)[];
  next: string | null | undefined;
  onChange: (cursors: (string | undefined)[]) => void;
  showPage?: boolean;
}) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={cursors.length < 2} onClick={() => onChange(cursors.slice(0, -1))}>
        Previous page
      </button>
      {showPage ? <span class="muted small">page {cursors.length}</span> : null}
      <button type="button" disabled={!next} onClick={() => onChange([...cursors, next!])}>
        Next page
      </button>
    </nav>
  );
}
