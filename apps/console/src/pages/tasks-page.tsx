import { HEALTH_STATES, TASK_STATUSES, type Task, type TaskDetail, TaskListQuery } from '@punctual/contract';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, errorText } from '../api.js';
import { CursorPager, ErrorText, Health, healthWords, Labels, Status, TwoZones } from '../components/bits.js';
import { formatSpan } from '../format/time.js';
import { scheduleExpression, scheduleWords } from '../format/schedule-words.js';
import { startLagMs } from '../components/bits.js';
import { Table } from '../components/table.js';
import { useLoad } from '../load.js';

const PAGE_SIZE = 25;
/** Details (next fire, last run) are fetched per row, a few at a time. */
const DETAIL_CONCURRENCY = 4;

type Filters = { q: string; health: string; status: string; label: string; handler: string };

function filtersOf(query: Record<string, string>): Filters {
  return {
    q: query.q ?? '',
    health: query.health ?? '',
    status: query.status ?? '',
    label: query.label ?? '',
    handler: query.handler ?? '',
  };
}

function searchOf(filters: Filters): string {
  const params = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ''));
  const text = params.toString();
  return text ? `/?${text}` : '/';
}

/** Each task's detail (its true next fire time and its last execution), loaded a few at a time. */
function useDetails(tasks: Task[] | undefined): Map<string, TaskDetail | string> {
  const [details, setDetails] = useState(new Map<string, TaskDetail | string>());
  useEffect(() => {
    setDetails(new Map());
    if (!tasks) return undefined;
    let stopped = false;
    const queue = [...tasks];
    const work = async () => {
      for (let task = queue.shift(); task && !stopped; task = queue.shift()) {
        const name = task.name;
        const detail = await api.tasks.get(name).catch((error: unknown) => errorText(error));
        if (!stopped) setDetails((m) => new Map(m).set(name, detail));
      }
    };
    for (let i = 0; i < DETAIL_CONCURRENCY; i += 1) void work(); // never rejects: an error is the detail shown
    return () => {
      stopped = true;
    };
  }, [tasks]);
  return details;
}

/** The task's latest due run, whatever became of it (a task whose runs died shows a dead one); never a slot planned ahead. */
function LastRun({ detail, zone }: { detail: TaskDetail | string | undefined; zone: string }) {
  if (detail === undefined) return <span class="muted">…</span>;
  if (typeof detail === 'string')
    return (
      <span class="muted" title={detail}>
        unavailable
      </span>
    );
  const last = detail.lastExecution;
  if (!last) return <span class="muted">never ran</span>;
  const lag = startLagMs(last);
  return (
    <span class="stack">
      <Status status={last.status} reason={last.skipReason} />
      <TwoZones at={last.scheduledFor} zone={zone} />
      {lag !== null ? <span class="muted small">started {formatSpan(lag)} after its fire time</span> : null}
    </span>
  );
}

/**
 * The next slot to fire, from the detail's `upcoming` (a slot planned ahead included; the task's
 * cursor, the next slot not yet planned, may be later). A completed task's last slot, planned and
 * not yet fired, is still next.
 */
function NextFire({ task, detail }: { task: Task; detail: TaskDetail | string | undefined }) {
  if (task.status === 'paused') return <span class="muted">paused</span>;
  if (detail === undefined) return <span class="muted">…</span>;
  const next = typeof detail === 'object' ? detail.upcoming[0] : task.status === 'active' ? task.nextRunAt : null;
  if (!next && task.status === 'completed') return <span class="muted">none: completed</span>;
  return <TwoZones at={next} zone={task.schedule.timezone} withRelative />;
}

export function TasksPage() {
  const { query, route } = useLocation();
  const filters = filtersOf(query);
  const [draft, setDraft] = useState(filters);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const key = searchOf(filters);
  // The form follows the address when it changes (back, forward, a link) — not on the first
  // render, whose effect runs after paint and would undo what the user chose meanwhile.
  const shownKey = useRef(key);
  useEffect(() => {
    if (shownKey.current === key) return;
    shownKey.current = key;
    setDraft(filtersOf(query));
    setCursors([undefined]);
  }, [key]);
  const cursor = cursors.at(-1);
  const handlers = useLoad(() => api.handlers.list(), []);
  const page = useLoad(
    () =>
      api.tasks
        .list({
          limit: PAGE_SIZE,
          q: filters.q || undefined,
          health: (filters.health || undefined) as Task['health']['state'] | undefined,
          status: (filters.status || undefined) as Task['status'] | undefined,
          handler: filters.handler || undefined,
          label: filters.label ? [filters.label] : undefined,
        })
        .page(cursor),
    [key, cursor],
  );
  const details = useDetails(page.data?.items);
  useEffect(() => {
    document.title = 'Tasks · Punctual';
  }, []);

  const [formError, setFormError] = useState<string | null>(null);
  const apply = (event: Event) => {
    event.preventDefault();
    const next = { ...draft, q: draft.q.trim(), label: draft.label.trim(), handler: draft.handler.trim() };
    // The contract's own rules, checked here so a typo is explained before anything is asked.
    const checked = TaskListQuery.safeParse({
      q: next.q || undefined,
      health: next.health || undefined,
      status: next.status || undefined,
      handler: next.handler || undefined,
      label: next.label ? [next.label] : undefined,
    });
    if (!checked.success)
      return setFormError(checked.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('; '));
    setFormError(null);
    route(searchOf(next));
  };
  const field = (name: keyof Filters) => ({
    value: draft[name],
    onInput: (e: Event) => setDraft({ ...draft, [name]: (e.currentTarget as HTMLInputElement).value }),
  });

  return (
    <main class="page">
      <h1>Tasks</h1>
      <form class="filters" role="search" onSubmit={apply}>
        <div class="field">
          <label for="filter-q">Search</label>
          <input id="filter-q" type="search" name="q" placeholder="name or description" {...field('q')} />
        </div>
        <div class="field">
          <label for="filter-health">Health</label>
          <select
            id="filter-health"
            name="health"
            value={draft.health}
            onChange={(e) => setDraft({ ...draft, health: e.currentTarget.value })}
          >
            <option value="">any</option>
            {HEALTH_STATES.map((h) => (
              <option key={h} value={h}>
                {healthWords(h)}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-status">Status</label>
          <select
            id="filter-status"
            name="status"
            value={draft.status}
            onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}
          >
            <option value="">any</option>
            {TASK_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-label">Label</label>
          <input id="filter-label" name="label" placeholder="team=billing" {...field('label')} />
        </div>
        <div class="field">
          <label for="filter-handler">Handler</label>
          <input id="filter-handler" name="handler" list="handler-names" placeholder="http" {...field('handler')} />
          <datalist id="handler-names">
            {(handlers.data ?? []).map((h) => (
              <option key={h.name} value={h.name} />
            ))}
          </datalist>
        </div>
        <div class="filter-buttons">
          <button type="submit" class="primary">
            Filter
          </button>
          {key !== '/' ? (
            <button type="button" onClick={() => route('/')}>
              Clear
            </button>
          ) : null}
        </div>
      </form>
      <ErrorText error={formError ?? page.error} />
      {page.data ? (
        <Table
          class="tasks-table"
          rows={page.data.items}
          rowKey={(task) => task.name}
          empty={
            key === '/'
              ? 'No tasks yet. Create one with the API or `punctual apply`.'
              : 'No task matches these filters.'
          }
          columns={[
            { title: 'Health', cell: (task) => <Health health={task.health} zone={task.schedule.timezone} /> },
            {
              title: 'Name',
              cell: (task) => (
                <>
                  <a href={`/tasks/${encodeURIComponent(task.name)}`} class="task-link">
                    {task.name}
                  </a>
                  <span class="muted small block">{task.handler}</span>
                </>
              ),
            },
            {
              title: 'Status',
              cell: (task) => (
                <>
                  <Status status={task.status} />
                  {task.lastError ? (
                    <span class="status status-dead block" title={task.lastError}>
                      planner error
                    </span>
                  ) : null}
                </>
              ),
            },
            {
              title: 'Schedule',
              cell: (task) => (
                <>
                  {scheduleWords(task.schedule)}
                  <code class="block small">{scheduleExpression(task.schedule)}</code>
                </>
              ),
            },
            { title: 'Next fire', cell: (task) => <NextFire task={task} detail={details.get(task.name)} /> },
            {
              title: 'Last run',
              cell: (task) => <LastRun detail={details.get(task.name)} zone={task.schedule.timezone} />,
            },
            { title: 'Labels', cell: (task) => <Labels labels={task.labels} /> },
          ]}
        />
      ) : null}
      <CursorPager cursors={cursors} next={page.data?.nextCursor} onChange={setCursors} showPage />
    </main>
  );
}
