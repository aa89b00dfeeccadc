import type { ComponentChildren } from 'preact';
import { PunctualApiError } from '@punctual/client';
import type { Execution } from '@punctual/contract';
import { useEffect, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api } from '../api.js';
import { ErrorText, Notice, Section, Status } from '../components/bits.js';
import { CHART_WINDOW_MS } from '../components/chart-window.js';
import { LazyRunChart } from '../components/lazy-run-chart.js';
import { RunHistory } from '../components/run-history.js';
import { type Say, TaskActions } from '../components/task-actions.js';
import { FireTimes, TaskDefinition } from '../components/task-definition.js';
import { TimelineStrip } from '../components/timeline-strip.js';
import { TaskVersions } from '../components/task-versions.js';
import { useLoad } from '../load.js';

const UPCOMING = 20;
const HISTORY_PAGE = 20;
/** The chart draws at most this many runs (the latest): an every-second task has 86,400 a day. */
const CHART_MAX_RUNS = 2_000;
const REFRESH_MS = 15_000;

/** The runs of the last 24 hours, newest first, at most {@link CHART_MAX_RUNS}. */
async function recentRuns(name: string, now: number): Promise<{ runs: Execution[]; truncated: boolean }> {
  const runs: Execution[] = [];
  for await (const page of api.executions
    .list({ task: name, from: new Date(now - CHART_WINDOW_MS).toISOString(), limit: 500 })
    .pages()) {
    runs.push(...page.items);
    if (runs.length >= CHART_MAX_RUNS)
      return {
        runs: runs.slice(0, CHART_MAX_RUNS),
        truncated: page.nextCursor !== null || runs.length > CHART_MAX_RUNS,
      };
  }
  return { runs, truncated: false };
}

export function TaskPage() {
  const { params } = useRoute();
  const { route } = useLocation();
  const name = params.name!;
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const say: Say = (kind, text) => setNotice({ kind, text });
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  // No task of the name (null): a deleted task's history may still be listed under it.
  const task = useLoad(
    () =>
      api.tasks
        .get(name, { upcoming: UPCOMING })
        .catch((error: unknown) =>
          error instanceof PunctualApiError && error.status === 404 ? null : Promise.reject(error),
        ),
    [name],
    REFRESH_MS,
  );
  const chart = useLoad(async () => ({ now: Date.now(), ...(await recentRuns(name, Date.now())) }), [name], REFRESH_MS);
  const history = useLoad(
    () => api.tasks.executions(name, { limit: HISTORY_PAGE }).page(cursors.at(-1)),
    [name, cursors],
    REFRESH_MS,
  );
  useEffect(() => {
    document.title = `${name} · Punctual`;
    setNotice(null);
    setCursors([undefined]);
  }, [name]);
  const refresh = () => Promise.all([task.reload(), chart.reload(), history.reload()]);
  const pager = (
    <nav class="pager" aria-label="Run history pages">
      <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
        Newer runs
      </button>
      <button
        type="button"
        disabled={!history.data?.nextCursor}
        onClick={() => setCursors([...cursors, history.data!.nextCursor!])}
      >
        Older runs
      </button>
    </nav>
  );

  if (task.data === null && history.data) {
    return (
      <main class="page">
        <TaskHeading name={name} status={<span class="status status-cancelled">deleted</span>} />
        <p class="muted">No task has this name now. The runs recorded under it are kept; slots are shown in UTC.</p>
        <Notice notice={notice} />
        <Section title="Run history">
          <ErrorText error={history.error} />
          <RunHistory
            runs={history.data.items}
            zone="UTC"
            say={say}
            onChanged={() => void history.reload()}
            markDeleted={false}
          />
          {pager}
        </Section>
      </main>
    );
  }
  if (!task.data) {
    return (
      <main class="page">
        <h1>{name}</h1>
        {task.error ? (
          <ErrorText error={task.error} />
        ) : task.data === null && history.error ? (
          <ErrorText error={history.error} />
        ) : (
          <p class="muted">Loading…</p>
        )}
        <p>
          <a href="/">Back to the tasks</a>
        </p>
      </main>
    );
  }
  const t = task.data;
  return (
    <main class="page">
      <TaskHeading name={t.name} status={<Status status={t.status} />} />
      {t.lastError ? (
        <p class="notice notice-error" role="alert">
          The scheduler cannot compute this task's slots: {t.lastError}
        </p>
      ) : null}
      <TaskActions
        task={t}
        say={say}
        onChanged={() => void refresh()}
        onDeleted={() => {
          route('/');
        }}
      />
      <Notice notice={notice} />
      <div class="grid-2">
        <Section title="Definition">
          <TaskDefinition task={t} />
        </Section>
        <Section title={`Next ${UPCOMING} fire times`}>
          <FireTimes task={t} now={Date.now()} count={UPCOMING} />
        </Section>
      </div>
      <Section title="Timeline">
        <TimelineStrip name={t.name} zone={t.schedule.timezone} />
      </Section>
      <Section title="Last 24 hours">
        <ErrorText error={chart.error} />
        {chart.data ? (
          <LazyRunChart runs={chart.data.runs} now={chart.data.now} truncated={chart.data.truncated} />
        ) : (
          <p class="muted">Loading…</p>
        )}
      </Section>
      <Section title="Run history">
        <ErrorText error={history.error} />
        {history.data ? (
          <RunHistory runs={history.data.items} zone={t.schedule.timezone} say={say} onChanged={() => void refresh()} />
        ) : (
          <p class="muted">Loading…</p>
        )}
        {pager}
      </Section>
      <Section title="Versions">
        <TaskVersions name={t.name} zone={t.schedule.timezone} say={say} onChanged={() => void refresh()} />
      </Section>
    </main>
  );
}

/** The crumbs back to the list, the task's name and its status. */
function TaskHeading({ name, status }: { name: string; status: ComponentChildren }) {
  return (
    <>
      <p class="crumbs">
        <a href="/">Tasks</a> /
      </p>
      <div class="title-row">
        <h1>{name}</h1>
        {status}
      </div>
    </>
  );
}
