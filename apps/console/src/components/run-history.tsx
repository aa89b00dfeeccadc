import { type Execution, PENDING_EXECUTION_STATUSES, routes } from '@punctual/contract';
import { useState } from 'preact/hooks';
import { api, errorText } from '../api.js';
import { formatSpan } from '../format/time.js';
import { useMayCall } from '../session.js';
import { startLagMs, Status, Time } from './bits.js';
import { Table } from './table.js';
import type { Say } from './task-actions.js';
import { WhyButton } from './timeline-strip.js';

/** Runs that ended (or for now stand) without succeeding: each has a "why?". */
const NOT_SUCCEEDED: readonly string[] = ['dead', 'skipped', 'missed', 'cancelled', 'retrying'];

const PENDING: readonly string[] = PENDING_EXECUTION_STATUSES;

/** A span of time, or a dash when there is none (not started, not finished). */
function Span({ ms }: { ms: number | null }) {
  return ms === null ? <span class="muted">—</span> : <>{formatSpan(ms)}</>;
}

/** An execution's history of state changes, loaded when its row is opened. */
export function Events({ id, zone }: { id: string; zone: string }) {
  const [state, setState] = useState<{
    events?: Awaited<ReturnType<typeof api.executions.get>>['events'];
    error?: string;
  } | null>(null);
  const load = async (event: Event) => {
    if (!(event.currentTarget as HTMLDetailsElement).open || state?.events) return;
    try {
      setState({ events: (await api.executions.get(id)).events });
    } catch (error) {
      setState({ error: errorText(error) });
    }
  };
  return (
    <details class="events" onToggle={load}>
      <summary>Events</summary>
      {state?.error ? <p class="notice notice-error">{state.error}</p> : null}
      {state?.events ? (
        <ol class="event-list">
          {state.events.map((e, i) => (
            <li key={i}>
              <Time at={e.at} zone={zone} /> <span class="muted">{e.from ?? 'planned'}</span> → <Status status={e.to} />
              {e.workerId ? <span class="muted small"> on {e.workerId}</span> : null}
              {e.detail !== null && e.detail !== undefined ? (
                <code class="small block">{typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail)}</code>
              ) : null}
            </li>
          ))}
        </ol>
      ) : state ? null : (
        <p class="muted small">…</p>
      )}
    </details>
  );
}

/** Retry a dead execution, cancel a pending one: the buttons the operator role has. */
export function ExecutionButtons({
  execution,
  onChanged,
  say,
}: {
  execution: Execution;
  onChanged: () => void;
  say: Say;
}) {
  const mayCall = useMayCall();
  const [busy, setBusy] = useState(false);
  const run = (what: string, call: () => Promise<Execution>) => async () => {
    setBusy(true);
    try {
      const after = await call();
      say('ok', `${what}: run ${after.id} of ${after.task} is now ${after.status}.`);
      onChanged();
    } catch (error) {
      say('error', `${what} failed: ${errorText(error)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {execution.status === 'dead' && mayCall(routes.retryExecution) ? (
        <button type="button" disabled={busy} onClick={run('Retried', () => api.executions.retry(execution.id))}>
          Retry
        </button>
      ) : null}
      {PENDING.includes(execution.status) && mayCall(routes.cancelExecution) ? (
        <button type="button" disabled={busy} onClick={run('Cancelled', () => api.executions.cancel(execution.id))}>
          Cancel
        </button>
      ) : null}
    </>
  );
}

/**
 * A task's runs (due ones: no slot planned ahead), newest first: slot, trigger, status in words,
 * how late it started, how long it took, and its events. A run of a deleted task of the same name
 * says so (unless `markDeleted` is false: the history of a deleted task, where every run is).
 */
export function RunHistory({
  runs,
  zone,
  onChanged,
  say,
  markDeleted = true,
}: {
  runs: Execution[];
  zone: string;
  onChanged: () => void;
  say: Say;
  markDeleted?: boolean;
}) {
  return (
    <Table
      class="runs-table"
      rows={runs}
      rowKey={(run) => run.id}
      empty="No runs yet."
      columns={[
        {
          title: 'Slot',
          cell: (run) => (
            <>
              <Time at={run.scheduledFor} zone={zone} />
              {run.taskDeleted && markDeleted ? (
                <span class="muted small block" title="its task was deleted; a task of the same name came later">
                  of a deleted task
                </span>
              ) : null}
            </>
          ),
        },
        {
          title: 'Status',
          cell: (run) => (
            <>
              <Status status={run.status} reason={run.skipReason} />
              {run.attempt > 1 ? <span class="muted small"> attempt {run.attempt}</span> : null}
            </>
          ),
        },
        { title: 'Trigger', cell: (run) => run.trigger },
        { title: 'Start lag', cell: (run) => <Span ms={startLagMs(run)} /> },
        { title: 'Duration', cell: (run) => <Span ms={run.durationMs} /> },
        {
          title: 'Details',
          cell: (run) => (
            <>
              {run.error ? <p class="error-text small">{run.error}</p> : null}
              {NOT_SUCCEEDED.includes(run.status) ? (
                <WhyButton task={run.task} scheduledFor={run.scheduledFor} />
              ) : null}
              <div class="row-actions">
                <ExecutionButtons execution={run} onChanged={onChanged} say={say} />
              </div>
              <Events id={run.id} zone={zone} />
            </>
          ),
        },
      ]}
    />
  );
}
