import type { Me } from '@punctual/contract';
import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { CalendarPage, CalendarsPage } from './pages/calendars-page.js';
import { ClusterPage } from './pages/cluster-page.js';
import { DeadLettersPage } from './pages/dead-letters-page.js';
import { TaskPage } from './pages/task-page.js';
import { TasksPage } from './pages/tasks-page.js';
import { roleMayCall, SessionContext } from './session.js';
import { api } from './api.js';
import { useLoad } from './load.js';
import { chooseNamespace, currentNamespace } from './namespace.js';

/** Links the console routes itself; Bull Board, the docs and the login form are the server's pages. */
const CONSOLE_LINKS = /^\/(?!admin\/|docs)/;

function Nav({ me }: { me: Me }) {
  const { path } = useLocation();
  const current = (match: boolean) => (match ? { 'aria-current': 'page' as const } : {});
  return (
    <header class="topbar">
      <a class="brand" href="/">
        <span class="brand-mark" aria-hidden="true" />
        Punctual
      </a>
      <nav aria-label="Console">
        <a href="/" {...current(path === '/' || path.startsWith('/tasks/'))}>
          Tasks
        </a>
        <a href="/calendars" {...current(path === '/calendars' || path.startsWith('/calendars/'))}>
          Calendars
        </a>
        <a href="/dead-letters" {...current(path === '/dead-letters')}>
          Dead letters
        </a>
        <a href="/cluster" {...current(path === '/cluster')}>
          Cluster
        </a>
        {/* Bull Board is admin-only on the server: an operator or viewer is not offered a link it would refuse. */}
        {roleMayCall(me.role, { role: 'admin' }) ? <a href="/admin/queues">Bull Board</a> : null}
        <a href="/docs">API docs</a>
      </nav>
      <NamespacePicker me={me} />
      <form class="whoami" method="post" action="/admin/logout">
        <span class="muted small" title={`signed in as ${me.actor}`}>
          {me.actor} · {me.role}
        </span>
        <button type="submit" class="link-button">
          Sign out
        </button>
      </form>
    </header>
  );
}

/** Namespaces the picker lists at most: past a page of them it is a field that finds them by their start. */
const PICKER_PAGE = 100;

/**
 * The namespace every page shows: the ones the key may see, from the API. Choosing another opens
 * its task list. A key that sees one namespace, the default one, is not shown a choice; a key scoped
 * to namespaces is taken to the first of them when the page's is not one. A cluster of more
 * namespaces than a page (thousands of teams or customers) gets a field instead of a list: typing
 * the start of a name offers the first page of those that start so.
 */
function NamespacePicker({ me }: { me: Me }) {
  const current = currentNamespace();
  const outside = me.namespaces !== null && !me.namespaces.includes(current);
  useEffect(() => {
    if (outside && me.namespaces?.[0]) chooseNamespace(me.namespaces[0]);
  }, [outside]);
  const [prefix, setPrefix] = useState('');
  const [many, setMany] = useState(false);
  const { data } = useLoad(
    () => api.namespaces.list({ limit: PICKER_PAGE, prefix: prefix || undefined }).page(),
    [prefix],
  );
  useEffect(() => {
    if (data?.nextCursor) setMany(true);
  }, [data]);
  const names = data?.items.map((n) => n.name) ?? [current];
  if (many) {
    return (
      <label class="namespace-picker">
        <span class="muted small">Namespace</span>
        <input
          list="namespace-choices"
          placeholder={current}
          onInput={(e) => setPrefix((e.target as HTMLInputElement).value.toLowerCase())}
          onChange={(e) => {
            const value = (e.target as HTMLInputElement).value.toLowerCase();
            if (names.includes(value) && value !== current) chooseNamespace(value);
          }}
        />
        <datalist id="namespace-choices">
          {names.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
      </label>
    );
  }
  if (!names.includes(current)) names.unshift(current);
  if (names.length === 1 && current === 'default') return null;
  return (
    <label class="namespace-picker">
      <span class="muted small">Namespace</span>
      <select value={current} onChange={(e) => chooseNamespace((e.target as HTMLSelectElement).value)}>
        {names.map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
    </label>
  );
}

function NotFound() {
  return (
    <main class="page">
      <h1>Not found</h1>
      <p>
        No console page here. <a href="/">Back to the tasks</a>.
      </p>
    </main>
  );
}

export function App({ me }: { me: Me }) {
  return (
    <SessionContext.Provider value={me}>
      <LocationProvider scope={CONSOLE_LINKS}>
        <Nav me={me} />
        <Router>
          <Route path="/" component={TasksPage} />
          <Route path="/tasks/:name" component={TaskPage} />
          <Route path="/calendars" component={CalendarsPage} />
          <Route path="/calendars/:name" component={CalendarPage} />
          <Route path="/dead-letters" component={DeadLettersPage} />
          <Route path="/cluster" component={ClusterPage} />
          <Route default component={NotFound} />
        </Router>
      </LocationProvider>
    </SessionContext.Provider>
  );
}
