import type { Calendar } from '@punctual/contract';
import { useEffect, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { api } from '../api.js';
import { ErrorText, Section } from '../components/bits.js';
import { Table } from '../components/table.js';
import { useLoad } from '../load.js';

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const WEEKDAYS = ['Mo', 'Tu', 'We', 'Th', 'Fr', 'Sa', 'Su'];

/** Links to the pages of the tasks that exclude a calendar, or a dash. */
function TaskLinks({ tasks }: { tasks: string[] }) {
  if (tasks.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="labels" aria-label="Tasks that exclude it">
      {tasks.map((name) => (
        <li key={name} class="chip">
          <a href={`/tasks/${encodeURIComponent(name)}`}>{name}</a>
        </li>
      ))}
    </ul>
  );
}

/** `/calendars`: every calendar of excluded days, its zone, what it holds and the tasks that use it. */
export function CalendarsPage() {
  const calendars = useLoad(() => api.calendars.list(), []);
  useEffect(() => {
    document.title = 'Calendars · Punctual';
  }, []);
  return (
    <main class="page">
      <h1>Calendars</h1>
      <p class="muted">
        Named sets of excluded days: a task whose schedule excludes a calendar has no run on its days.
      </p>
      <ErrorText error={calendars.error} />
      {calendars.data ? (
        <Table<Calendar>
          label="Calendars"
          rows={calendars.data}
          rowKey={(c) => c.name}
          empty="No calendars yet: PUT /v1/calendars/{name}, or declare them in a task file beside its tasks."
          columns={[
            { title: 'Name', cell: (c) => <a href={`/calendars/${encodeURIComponent(c.name)}`}>{c.name}</a> },
            { title: 'Time zone', cell: (c) => c.timezone ?? <span class="muted">each task's own</span> },
            {
              title: 'Days',
              cell: (c) =>
                `${c.dates.length} date${c.dates.length === 1 ? '' : 's'}, ${c.rrules.length} rule${c.rrules.length === 1 ? '' : 's'}`,
            },
            { title: 'Managed by', cell: (c) => c.managedBy ?? <span class="muted">—</span> },
            { title: 'Used by', cell: (c) => <TaskLinks tasks={c.tasks} /> },
          ]}
        />
      ) : (
        <p class="muted">Loading…</p>
      )}
    </main>
  );
}

/** One month as a grid of weeks (Monday first), its excluded days marked. */
function Month({ year, month, excluded }: { year: number; month: number; excluded: ReadonlySet<string> }) {
  const first = new Date(Date.UTC(year, month, 1));
  const length = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const lead = (first.getUTCDay() + 6) % 7;
  const cells: (number | null)[] = [
    ...Array.from({ length: lead }, () => null),
    ...Array.from({ length }, (_, i) => i + 1),
  ];
  while (cells.length % 7) cells.push(null);
  const weeks = Array.from({ length: cells.length / 7 }, (_, w) => cells.slice(w * 7, w * 7 + 7));
  const iso = (day: number) => `${year}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
  return (
    <table class="month" aria-label={`${MONTHS[month]} ${year}`}>
      <caption>{MONTHS[month]}</caption>
      <thead>
        <tr>
          {WEEKDAYS.map((d) => (
            <th key={d} scope="col">
              {d}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {weeks.map((week, w) => (
          <tr key={w}>
            {week.map((day, d) =>
              day === null ? (
                <td key={d} />
              ) : excluded.has(iso(day)) ? (
                <td key={d} class="excluded-day" title={`${iso(day)}: excluded`}>
                  <time dateTime={iso(day)}>{day}</time>
                </td>
              ) : (
                <td key={d}>
                  <time dateTime={iso(day)}>{day}</time>
                </td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** `/calendars/:name`: a calendar's year of excluded days, what it is made of, and the tasks that use it. */
export function CalendarPage() {
  const name = useRoute().params.name!;
  const [year, setYear] = useState(() => new Date().getUTCFullYear());
  const calendar = useLoad(() => api.calendars.get(name), [name]);
  const days = useLoad(() => api.calendars.days(name, year), [name, year]);
  useEffect(() => {
    document.title = `${name} · Calendars · Punctual`;
  }, [name]);
  const c = calendar.data;
  const excluded = new Set(days.data?.days ?? []);
  return (
    <main class="page">
      <p class="muted small">
        <a href="/calendars">Calendars</a> /
      </p>
      <h1>{name}</h1>
      <ErrorText error={calendar.error ?? days.error} />
      {c ? (
        <Section title="Definition">
          <dl class="definition">
            <div class="def-row">
              <dt>Description</dt>
              <dd>{c.description ?? <span class="muted">—</span>}</dd>
            </div>
            <div class="def-row">
              <dt>Time zone</dt>
              <dd>
                {c.timezone ?? (
                  <span class="muted">each task's own (the dates are local dates of the task's zone)</span>
                )}
              </dd>
            </div>
            <div class="def-row">
              <dt>Dates</dt>
              <dd>{c.dates.length ? c.dates.join(', ') : <span class="muted">none</span>}</dd>
            </div>
            <div class="def-row">
              <dt>Rules</dt>
              <dd>
                {c.rrules.length ? c.rrules.map((r) => <code key={r}>{r} </code>) : <span class="muted">none</span>}
              </dd>
            </div>
            <div class="def-row">
              <dt>Managed by</dt>
              <dd>{c.managedBy ?? <span class="muted">—</span>}</dd>
            </div>
            <div class="def-row">
              <dt>Used by</dt>
              <dd>
                <TaskLinks tasks={c.tasks} />
              </dd>
            </div>
          </dl>
        </Section>
      ) : null}
      <Section title={`Excluded days of ${year}`}>
        <div class="year-nav">
          <button type="button" onClick={() => setYear(year - 1)} aria-label="Previous year">
            ← {year - 1}
          </button>
          <span aria-live="polite">
            {days.data
              ? `${days.data.days.length} excluded day${days.data.days.length === 1 ? '' : 's'} in ${year}`
              : 'Loading…'}
          </span>
          <button type="button" onClick={() => setYear(year + 1)} aria-label="Next year">
            {year + 1} →
          </button>
        </div>
        <div class="year" aria-label={`The year ${year}`}>
          {MONTHS.map((_, month) => (
            <Month key={month} year={year} month={month} excluded={excluded} />
          ))}
        </div>
      </Section>
    </main>
  );
}
