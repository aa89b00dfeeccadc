import { routes } from '@punctual/contract';
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, errorText } from '../api.js';
import { CursorPager, ErrorText, Notice, Status, Time, TwoZones } from '../components/bits.js';
import { ExecutionButtons } from '../components/run-history.js';
import { Table } from '../components/table.js';
import { browserZone } from '../format/time.js';
import { useLoad } from '../load.js';
import { useMayCall } from '../session.js';

const PAGE_SIZE = 50;
/** The tasks' zones are read a few at a time. */
const ZONE_CONCURRENCY = 4;

/**
 * The zone of each task named in `names`, read once per task while the page is open: a name maps to
 * null when its task cannot be read (deleted since), and is absent until the answer comes.
 */
function useTaskZones(names: string[]): Map<string, string | null> {
  const [zones, setZones] = useState(new Map<string, string | null>());
  const key = JSON.stringify([...new Set(names)].sort());
  useEffect(() => {
    const queue = (JSON.parse(key) as string[]).filter((name) => !zones.has(name));
    if (queue.length === 0) return undefined;
    let stopped = false;
    const work = async () => {
      for (let name = queue.shift(); name !== undefined && !stopped; name = queue.shift()) {
        const task = name;
        const zone = await api.tasks.get(task, { upcoming: 1 }).then(
          (detail) => detail.schedule.timezone,
          () => null,
        );
        if (!stopped) setZones((m) => new Map(m).set(task, zone));
      }
    };
    for (let i = 0; i < ZONE_CONCURRENCY; i += 1) void work(); // never rejects: a zone it cannot read is null
    return () => {
      stopped = true;
    };
  }, [key]);
  return zones;
}

/** An instant in the run's task's zone and, when it differs, in the browser's; the browser's alone until the task's zone is known. */
function RunTime({
  at,
  taskZone,
  browser,
}: {
  at: string | null | undefined;
  taskZone: string | null | undefined;
  browser: string;
}) {
  return taskZone ? <TwoZones at={at} zone={taskZone} /> : <Time at={at} zone={browser} />;
}

/**
 * The two lists an operator works through: `dead` runs (attempts exhausted) to retry, and
 * `retrying` runs (waiting for their next attempt, a replayed dead letter among them) to cancel.
 */
const VIEWS = {
  dead: {
    title: 'Dead',
    verb: 'Retry',
    past: 'retried',
    route: routes.retryExecution,
    call: (id: string) => api.executions.retry(id),
  },
  retrying: {
    title: 'Retrying',
    verb: 'Cancel',
    past: 'cancelled',
    route: routes.cancelExecution,
    call: (id: string) => api.executions.cancel(id),
  },
} as const;
type View = keyof typeof VIEWS;

export function DeadLettersPage() {
  const { query } = useLocation();
  const view: View = query.status === 'retrying' ? 'retrying' : 'dead';
  const spec = VIEWS[view];
  const mayCall = useMayCall();
  const mayAct = mayCall(spec.route);
  const zone = browserZone();
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [selected, setSelected] = useState(new Set<string>());
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const page = useLoad(
    () => api.executions.list({ status: view, limit: PAGE_SIZE }).page(cursors.at(-1)),
    [view, cursors],
  );
  useEffect(() => {
    document.title = 'Dead letters · Punctual';
  }, []);
  useEffect(() => {
    setCursors([undefined]);
    setSelected(new Set());
    setNotice(null);
  }, [view]);
  const items = page.data?.items ?? [];
  const taskZones = useTaskZones(items.map((e) => e.task));
  const toggle = (id: string) =>
    setSelected((s) => (s.has(id) ? new Set([...s].filter((x) => x !== id)) : new Set(s).add(id)));
  const allSelected = items.length > 0 && items.every((e) => selected.has(e.id));

  const actOnSelected = async () => {
    const ids = items.filter((e) => selected.has(e.id)).map((e) => e.id);
    setBusy(true);
    // One at a time, in the order shown: each is its own fenced transition, so some may fail alone.
    const failures: string[] = [];
    for (const id of ids) await spec.call(id).catch((error: unknown) => failures.push(errorText(error)));
    setBusy(false);
    setSelected(new Set());
    const done = ids.length - failures.length;
    setNotice(
      failures.length
        ? { kind: 'error', text: `${done} of ${ids.length} ${spec.past}; ${failures.length} failed: ${failures[0]}` }
        : { kind: 'ok', text: `${done} run${done === 1 ? '' : 's'} ${spec.past}.` },
    );
    await page.reload();
  };

  return (
    <main class="page">
      <h1>Dead letters</h1>
      <p class="muted">
        Runs whose attempts are exhausted stay <strong>dead</strong> until someone retries them; a retried run waits as{' '}
        <strong>retrying</strong> for its next attempt and can still be cancelled.
      </p>
      <nav class="tabs" aria-label="Lists">
        {(Object.keys(VIEWS) as View[]).map((v) => (
          <a
            key={v}
            href={v === 'dead' ? '/dead-letters' : '/dead-letters?status=retrying'}
            aria-current={v === view ? 'page' : undefined}
          >
            {VIEWS[v].title}
          </a>
        ))}
      </nav>
      <Notice notice={notice} />
      <ErrorText error={page.error} />
      {mayAct && items.length > 0 ? (
        <div class="bulk-bar" role="group" aria-label="Selected runs">
          <label class="check">
            <input
              type="checkbox"
              checked={allSelected}
              onChange={() => setSelected(allSelected ? new Set() : new Set(items.map((e) => e.id)))}
            />
            Select all
          </label>
          <button
            type="button"
            class={view === 'dead' ? 'primary' : 'danger'}
            disabled={busy || selected.size === 0}
            onClick={actOnSelected}
          >
            {spec.verb} selected ({selected.size})
          </button>
        </div>
      ) : null}
      {page.data ? (
        <Table
          class="dead-table"
          rows={items}
          rowKey={(e) => e.id}
          empty={
            view === 'dead'
              ? 'No dead letters. Every run either succeeded or is still being tried.'
              : 'No run is waiting for another attempt.'
          }
          columns={[
            mayAct && {
              title: 'Select',
              head: <span class="visually-hidden">Selected</span>,
              cell: (e) => (
                <input
                  type="checkbox"
                  aria-label={`Select run of ${e.task} at ${e.scheduledFor}`}
                  checked={selected.has(e.id)}
                  onChange={() => toggle(e.id)}
                />
              ),
            },
            { title: 'Task', cell: (e) => <a href={`/tasks/${encodeURIComponent(e.task)}`}>{e.task}</a> },
            {
              title: 'Slot',
              cell: (e) => <RunTime at={e.scheduledFor} taskZone={taskZones.get(e.task)} browser={zone} />,
            },
            {
              title: 'Status',
              cell: (e) => (
                <>
                  <Status status={e.status} />{' '}
                  <span class="muted small">
                    after {e.attempt} attempt{e.attempt === 1 ? '' : 's'}
                  </span>
                </>
              ),
            },
            {
              title: 'Error',
              cell: (e) => (e.error ? <span class="error-text small">{e.error}</span> : <span class="muted">—</span>),
            },
            {
              title: 'Finished',
              cell: (e) => (
                <RunTime at={e.finishedAt ?? e.nextAttemptAt} taskZone={taskZones.get(e.task)} browser={zone} />
              ),
            },
            {
              title: 'Actions',
              cell: (e) => (
                <div class="row-actions">
                  <ExecutionButtons
                    execution={e}
                    say={(kind, text) => setNotice({ kind, text })}
                    onChanged={() => void page.reload()}
                  />
                </div>
              ),
            },
          ]}
        />
      ) : null}
      <CursorPager cursors={cursors} next={page.data?.nextCursor} onChange={setCursors} />
    </main>
  );
}
